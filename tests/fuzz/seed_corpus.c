/* Writes the fuzzers' checked-in seeds from the test fixtures:
 *
 *   seed_corpus SOURCE_DIR OUT_DIR
 *
 * OUT_DIR/corpus/fuzz_codec/: a framed message of every fixture event of
 * tests/unit/codec_fixtures.h (each type with and without its optional parts)
 * and of every line of tests/system/data/pipeline.jsonl;
 * OUT_DIR/corpus/fuzz_struct/: the same frames, which its mutator parses
 * and changes field by field;
 * OUT_DIR/corpus/fuzz_json/: the same events as JSON lines;
 * every full fixture also as each older version of its schema writes it
 * (job_event v1, id 1; runtime_sample v1, id 2; plan v1, id 5: without the
 * fields those lack), so the fuzzers start from the catalog's old-writer
 * resolution path too;
 * OUT_DIR/dlbrain.dict: a libFuzzer dictionary of the schemas' field names,
 * the event types and every allowed enumerated value, bare and quoted.
 * Every seed is checked to validate and to read back to the same event. scripts/fuzz
 * --seeds runs this. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <avro.h>
#include <cJSON.h>

#include "codec_fixtures.h"
#include "codec_internal.h"
#include "old_writer.h"
#include "catalog.h"
#include "codec.h"
#include "err.h"
#include "event.h"

#define DICT_MAX 512

static const dlb_catalog_t *cat;
static char *dict[DICT_MAX];
static size_t dict_cnt;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;

    fputs("seed_corpus: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static void mkdir_p(const char *path)
{
    char tmp[4096];

    snprintf(tmp, sizeof(tmp), "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0755) && errno != EEXIST)
                die("mkdir %s: %s", tmp, strerror(errno));
            *p = '/';
        }
    if (mkdir(tmp, 0755) && errno != EEXIST)
        die("mkdir %s: %s", tmp, strerror(errno));
}

static void write_file(const char *dir, const char *name, const void *buf, size_t len)
{
    char path[4096];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if (!(f = fopen(path, "wb")) || fwrite(buf, 1, len, f) != len || fclose(f))
        die("writing %s: %s", path, strerror(errno));
}

/* A framed message, for each target that reads frames. */
static void write_frame(const char *out, const char *file, const void *buf, size_t len)
{
    static const char *const targets[] = {"fuzz_codec", "fuzz_struct"};
    char dir[4096];

    for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
        snprintf(dir, sizeof(dir), "%s/corpus/%s", out, targets[i]);
        write_file(dir, file, buf, len);
    }
}

/* One seed of each kind from ev, which must be valid. */
static void write_seeds(const char *out, const char *name, const dlb_event_t *ev)
{
    char dir[4096], file[256], err[512];
    char *json = NULL;
    void *buf = NULL;
    size_t len = 0;
    dlb_event_t back;

    if (dlb_event_validate(ev, err, sizeof(err)))
        die("%s: not valid: %s", name, err);
    if (dlb_codec_encode(cat, ev, &buf, &len, err, sizeof(err)) ||
        dlb_codec_decode(cat, buf, len, &back, err, sizeof(err)))
        die("%s: %s", name, err);
    assert_events_equal(ev, &back); /* aborts with the difference */
    dlb_event_clear(&back);
    snprintf(file, sizeof(file), "%s.bin", name);
    write_frame(out, file, buf, len);
    free(buf);
    if (dlb_event_to_json(cat, ev, &json, err, sizeof(err)) ||
        dlb_json_to_event(cat, json, strlen(json), 0, &back, err, sizeof(err)))
        die("%s: JSON: %s", name, err);
    assert_events_equal(ev, &back);
    dlb_event_clear(&back);
    snprintf(dir, sizeof(dir), "%s/corpus/fuzz_json", out);
    snprintf(file, sizeof(file), "%s.json", name);
    write_file(dir, file, json, strlen(json));
    free(json);
}

/* ev framed with the older schema old_id of its type, and as that schema's
 * JSON: the newest fields it lacks are left out (old_writer.h). */
static void write_old_seeds(const char *out, const char *name, const dlb_event_t *ev,
                            int32_t old_id)
{
    char dir[4096], file[256], err[512];
    char *line = NULL;
    uint8_t *buf;
    size_t len = 0;
    dlb_event_t back;

    buf = ow_frame(cat, old_id, ev, &len, &line);
    /* Both must read (through the resolver, and through the newest JSON reader). */
    if (dlb_codec_decode(cat, buf, len, &back, err, sizeof(err)) ||
        dlb_event_validate(&back, err, sizeof(err)))
        die("%s: id %d does not read back: %s", name, (int)old_id, err);
    dlb_event_clear(&back);
    if (dlb_json_to_event(cat, line, strlen(line), 0, &back, err, sizeof(err)))
        die("%s: old JSON does not read back: %s", name, err);
    dlb_event_clear(&back);
    snprintf(file, sizeof(file), "%s.bin", name);
    write_frame(out, file, buf, len);
    snprintf(dir, sizeof(dir), "%s/corpus/fuzz_json", out);
    snprintf(file, sizeof(file), "%s.json", name);
    write_file(dir, file, line, strlen(line));
    free(buf);
    cJSON_free(line);
}

static void dict_add(const char *word)
{
    for (size_t i = 0; i < dict_cnt; i++)
        if (!strcmp(dict[i], word))
            return;
    if (dict_cnt == DICT_MAX)
        die("more than %d dictionary words", DICT_MAX);
    if (!(dict[dict_cnt++] = strdup(word)))
        die("out of memory");
}

/* The field names of schema s and of every record inside it. */
static void dict_fields(avro_schema_t s, int depth)
{
    s = dlb_avro_deref(s);
    if (depth > 16)
        return;
    if (is_avro_record(s)) {
        for (size_t i = 0; i < avro_schema_record_size(s); i++) {
            dict_add(avro_schema_record_field_name(s, (int)i));
            dict_fields(avro_schema_record_field_get_by_index(s, (int)i), depth + 1);
        }
    } else if (is_avro_union(s)) {
        for (size_t i = 0; i < avro_schema_union_size(s); i++)
            dict_fields(avro_schema_union_branch(s, (int)i), depth + 1);
    } else if (is_avro_array(s)) {
        dict_fields(avro_schema_array_items(s), depth + 1);
    } else if (is_avro_map(s)) {
        dict_fields(avro_schema_map_values(s), depth + 1);
    }
}

static void write_dict(const char *out)
{
    static const char *const actions[] = {DLB_ACTION_RELAUNCH, DLB_ACTION_REPLACE, NULL};
    const char *const *const lists[] = {dlb_stages,     dlb_job_states, dlb_exit_reasons,
                                        dlb_node_kinds, dlb_pod_types,  actions};
    char path[4096];
    FILE *f;

    dict_add("type");
    for (int t = DLB_EV_NONE + 1; t < DLB_EV__CNT; t++)
        dict_add(dlb_event_type_name((dlb_event_type_t)t));
    for (size_t i = 0; i < dlb_catalog_count(cat); i++)
        dict_fields(dlb_catalog_at(cat, i)->schema, 0);
    for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]); l++)
        for (const char *const *v = lists[l]; *v; v++)
            dict_add(*v);
    snprintf(path, sizeof(path), "%s/dlbrain.dict", out);
    if (!(f = fopen(path, "w")))
        die("%s: %s", path, strerror(errno));
    fprintf(f, "# libFuzzer dictionary written by tests/fuzz/seed_corpus.c (scripts/fuzz "
               "--seeds):\n# field names, event types and allowed values, bare for Avro "
               "strings and quoted for JSON.\n");
    /* Identifiers only, so no character needs escaping beyond the quotes. */
    for (size_t i = 0; i < dict_cnt; i++)
        fprintf(f, "\"%s\"\n\"\\\"%s\\\"\"\n", dict[i], dict[i]);
    if (fclose(f))
        die("%s: %s", path, strerror(errno));
}

static void pipeline_seeds(const char *src, const char *out)
{
    char path[4096], line[8192], name[64], err[512];
    dlb_event_t ev;
    FILE *f;
    int n = 0;

    snprintf(path, sizeof(path), "%s/tests/system/data/pipeline.jsonl", src);
    if (!(f = fopen(path, "r")))
        die("%s: %s", path, strerror(errno));
    while (fgets(line, sizeof(line), f)) {
        size_t len = strcspn(line, "\n");
        if (line[0] == '#' || !len)
            continue;
        if (dlb_json_to_event(cat, line, len, 0, &ev, err, sizeof(err)))
            die("%s: %s", path, err);
        snprintf(name, sizeof(name), "pipeline-%02d-%s", ++n, dlb_event_type_name(ev.type));
        write_seeds(out, name, &ev);
        dlb_event_clear(&ev);
    }
    fclose(f);
}

int main(int argc, char **argv)
{
    static const char *const kind[] = {"min", "full"};
    dlb_catalog_t *c;
    char dir[4096], name[64], err[512];

    if (argc != 3) {
        fprintf(stderr, "usage: seed_corpus SOURCE_DIR OUT_DIR\n");
        return 2;
    }
    if (dlb_catalog_new(&c, err, sizeof(err)))
        die("catalog: %s", err);
    cat = c;
    snprintf(dir, sizeof(dir), "%s/corpus/fuzz_codec", argv[2]);
    mkdir_p(dir);
    snprintf(dir, sizeof(dir), "%s/corpus/fuzz_json", argv[2]);
    mkdir_p(dir);
    snprintf(dir, sizeof(dir), "%s/corpus/fuzz_struct", argv[2]);
    mkdir_p(dir);
    for (int i = 0; i < FX_SAMPLES; i++) {
        dlb_event_t ev;
        fx_sample(&ev, i);
        snprintf(name, sizeof(name), "fixture-%s-%s", dlb_event_type_name(ev.type), kind[i % 2]);
        write_seeds(argv[2], name, &ev);
        /* The full event as every older version of its schema writes it:
         * fixture-<type>-full-v<N>, N counting that type's catalog ids. */
        for (size_t k = 0, version = 0; i % 2 && k < dlb_catalog_count(cat); k++) {
            const dlb_schema_entry_t *e = dlb_catalog_at(cat, k);
            if (e->type != ev.type || !e->resolver)
                continue;
            snprintf(name, sizeof(name), "fixture-%s-full-v%zu", dlb_event_type_name(ev.type),
                     ++version);
            write_old_seeds(argv[2], name, &ev, e->id);
        }
        dlb_event_clear(&ev);
    }
    pipeline_seeds(argv[1], argv[2]);
    write_dict(argv[2]);
    for (size_t i = 0; i < dict_cnt; i++)
        free(dict[i]);
    dlb_catalog_destroy(c);
    return 0;
}
