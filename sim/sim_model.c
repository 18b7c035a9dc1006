/* The simulator's speed model (sim_model.h): Pollux's step time fitted on
 * measured jobs, mapped onto PS jobs. */
#include "sim_model.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf.h"
#include "err.h"
#include "vec.h"

/* splitmix64 (Steele, Lea, Flood 2014): tiny, the same sequence everywhere. */
uint64_t dlb_rng_next(dlb_rng_t *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

double dlb_rng_unit(dlb_rng_t *r)
{
    return (double)(dlb_rng_next(r) >> 11) / 9007199254740992.0;
}

double dlb_rng_range(dlb_rng_t *r, double lo, double hi)
{
    return lo + (hi - lo) * dlb_rng_unit(r);
}

double dlb_sim_step_time(const dlb_sim_fit_t *f, int nodes, int replicas, double local_bsz)
{
    double tc = f->a + f->b * local_bsz, tn;

    if (replicas <= 1)
        return tc;
    tn = nodes <= 1 ? f->ar + f->br * replicas : f->an + f->bn * replicas;
    return pow(pow(tc, f->g) + pow(tn, f->g), 1.0 / f->g);
}

/* ---- reading the measurements ----------------------------------------- */

static int push_point(dlb_sim_point_t **pts, size_t *n, const dlb_sim_point_t *p)
{
    dlb_sim_point_t *np = dlb_vec_push((void **)pts, n, sizeof(*np));

    if (!np)
        return DLB_ERR_NOMEM;
    *np = *p;
    return 0;
}

int dlb_sim_points_load(const char *path, dlb_sim_point_t **pts, size_t *n, char *errstr,
                        size_t errstr_size)
{
    FILE *fp = fopen(path, "r");
    char line[512];
    int placements, lineno = 1, err = 0;

    if (!fp)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOTFOUND, "%s: %s", path, strerror(errno));
    if (!fgets(line, sizeof(line), fp)) {
        fclose(fp);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "%s: empty", path);
    }
    if (!strncmp(line, "placement,local_bsz,step_time", 29)) {
        placements = 1;
    } else if (!strncmp(line, "num_nodes,num_replicas,local_bsz,step_time", 42)) {
        placements = 0;
    } else {
        fclose(fp);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                          "%s:1: not a Pollux placements or scalability header", path);
    }
    while (fgets(line, sizeof(line), fp)) {
        dlb_sim_point_t p = {0};
        char placement[64];

        lineno++;
        if (line[0] == '\n' || line[0] == '\0')
            continue;
        if (placements) {
            if (sscanf(line, "%63[0-9],%lf,%lf", placement, &p.local_bsz, &p.step_time) != 3) {
                err = DLB_ERR_INVALID;
                break;
            }
            /* "1144": four nodes with 1, 1, 4 and 4 replicas. */
            for (const char *c = placement; *c; c++) {
                if (*c == '0')
                    continue;
                p.nodes++;
                p.replicas += *c - '0';
            }
        } else if (sscanf(line, "%d,%d,%lf,%lf", &p.nodes, &p.replicas, &p.local_bsz,
                          &p.step_time) != 4) {
            err = DLB_ERR_INVALID;
            break;
        }
        if (p.nodes < 1 || p.replicas < 1 || !(p.local_bsz > 0) || !(p.step_time > 0)) {
            err = DLB_ERR_INVALID;
            break;
        }
        if ((err = push_point(pts, n, &p)))
            break;
    }
    fclose(fp);
    if (err == DLB_ERR_INVALID)
        return dlb_seterr(errstr, errstr_size, err, "%s:%d: not a valid row", path, lineno);
    if (err)
        return dlb_seterr(errstr, errstr_size, err, "%s: out of memory", path);
    return 0;
}

double dlb_sim_mape(const dlb_sim_fit_t *f, const dlb_sim_point_t *pts, size_t n)
{
    double sum = 0;

    for (size_t i = 0; i < n; i++)
        sum += fabs(dlb_sim_step_time(f, pts[i].nodes, pts[i].replicas, pts[i].local_bsz) -
                    pts[i].step_time) /
               pts[i].step_time;
    return n ? 100.0 * sum / (double)n : 0;
}

/* ---- the fit ------------------------------------------------------------ */
#define NP 7 /* a b ar br an bn g */

/* Parameters live as logs, so the search cannot make them negative; g is
 * 1 + exp(x[6]) so it stays at or above 1 (no overlap is g = 1). */
static void unpack(const double *x, dlb_sim_fit_t *f)
{
    f->a = exp(x[0]);
    f->b = exp(x[1]);
    f->ar = exp(x[2]);
    f->br = exp(x[3]);
    f->an = exp(x[4]);
    f->bn = exp(x[5]);
    f->g = 1.0 + exp(x[6]);
}

/* Mean squared log error: every point weighs the same whether its step
 * takes 7 ms (NCF) or 1.5 s (BERT), the error MAPE reports. */
static double loss(const double *x, const dlb_sim_point_t *pts, size_t n)
{
    dlb_sim_fit_t f;
    double sum = 0;

    unpack(x, &f);
    for (size_t i = 0; i < n; i++) {
        double d = log(dlb_sim_step_time(&f, pts[i].nodes, pts[i].replicas, pts[i].local_bsz)) -
                   log(pts[i].step_time);
        sum += d * d;
    }
    return isfinite(sum) ? sum / (double)n : HUGE_VAL;
}

/* Nelder-Mead with the standard coefficients (reflection 1, expansion 2,
 * contraction 0.5, shrink 0.5) from x with initial steps of `step`. */
static double nelder_mead(double *x, double step, int iters, const dlb_sim_point_t *pts, size_t n)
{
    double s[NP + 1][NP], fv[NP + 1], c[NP], xr[NP], xe[NP], xc[NP];

    for (int i = 0; i <= NP; i++) {
        memcpy(s[i], x, sizeof(s[i]));
        if (i)
            s[i][i - 1] += step;
        fv[i] = loss(s[i], pts, n);
    }
    for (int it = 0; it < iters; it++) {
        int hi = 0, lo = 0, nh;
        double fr;

        for (int i = 1; i <= NP; i++) {
            if (fv[i] > fv[hi])
                hi = i;
            if (fv[i] < fv[lo])
                lo = i;
        }
        nh = lo;
        for (int i = 0; i <= NP; i++)
            if (i != hi && fv[i] > fv[nh])
                nh = i;
        for (int j = 0; j < NP; j++) {
            c[j] = 0;
            for (int i = 0; i <= NP; i++)
                if (i != hi)
                    c[j] += s[i][j] / NP;
            xr[j] = c[j] + (c[j] - s[hi][j]);
        }
        fr = loss(xr, pts, n);
        if (fr < fv[lo]) {
            double fe;
            for (int j = 0; j < NP; j++)
                xe[j] = c[j] + 2.0 * (c[j] - s[hi][j]);
            fe = loss(xe, pts, n);
            memcpy(s[hi], fe < fr ? xe : xr, sizeof(s[hi]));
            fv[hi] = fe < fr ? fe : fr;
        } else if (fr < fv[nh]) {
            memcpy(s[hi], xr, sizeof(s[hi]));
            fv[hi] = fr;
        } else {
            double fc;
            for (int j = 0; j < NP; j++)
                xc[j] = c[j] + 0.5 * (s[hi][j] - c[j]);
            fc = loss(xc, pts, n);
            if (fc < fv[hi]) {
                memcpy(s[hi], xc, sizeof(s[hi]));
                fv[hi] = fc;
            } else {
                for (int i = 0; i <= NP; i++) {
                    if (i == lo)
                        continue;
                    for (int j = 0; j < NP; j++)
                        s[i][j] = s[lo][j] + 0.5 * (s[i][j] - s[lo][j]);
                    fv[i] = loss(s[i], pts, n);
                }
            }
        }
    }
    int best = 0;
    for (int i = 1; i <= NP; i++)
        if (fv[i] < fv[best])
            best = i;
    memcpy(x, s[best], sizeof(s[best]));
    return fv[best];
}

int dlb_sim_fit_points(const dlb_sim_point_t *pts, size_t n, dlb_sim_fit_t *out)
{
    double x[NP], tmin = HUGE_VAL, per_sample = 0;
    int one_node = 0, across = 0; /* points with several replicas, on one node / several */

    if (n < 8)
        return DLB_ERR_INVALID;
    for (size_t i = 0; i < n; i++) {
        if (pts[i].step_time < tmin)
            tmin = pts[i].step_time;
        per_sample += pts[i].step_time / pts[i].local_bsz / (double)n;
        one_node |= pts[i].replicas > 1 && pts[i].nodes == 1;
        across |= pts[i].nodes > 1;
    }
    /* Start: half the fastest step as fixed cost, half the mean time per
     * sample as the slope, a network of the same order, g = 2. */
    x[0] = log(tmin / 2);
    x[1] = log(per_sample / 2);
    x[2] = log(tmin / 2);
    x[3] = log(tmin / 20);
    x[4] = log(tmin);
    x[5] = log(tmin / 10);
    x[6] = 0;
    /* Restarts from the best point so far get the simplex out of the narrow
     * valleys a 7-parameter fit has; the step shrinks as it settles. */
    for (int r = 0; r < 6; r++)
        nelder_mead(x, r < 3 ? 1.0 : 0.3, 1000, pts, n);
    unpack(x, out);
    /* A network term no point measures does not change the loss: the search
     * leaves it anywhere. Pollux's rule (goodput.py, fit_perf_params) sets it
     * to its lower bound, 1e-8: optimistic, that network costs nothing. */
    if (!one_node)
        out->ar = out->br = 1e-8;
    if (!across)
        out->an = out->bn = 1e-8;
    return 0;
}

int dlb_sim_fit_report(const dlb_sim_point_t *place, size_t n_place, const dlb_sim_point_t *scale,
                       size_t n_scale, dlb_sim_fit_report_t *out)
{
    dlb_sim_point_t *all;
    dlb_sim_fit_t f;
    int err;

    memset(out, 0, sizeof(*out));
    if (n_place < 8 || n_scale < 8)
        return DLB_ERR_INVALID;
    all = malloc((n_place + n_scale) * sizeof(*all));
    if (!all)
        return DLB_ERR_NOMEM;
    memcpy(all, place, n_place * sizeof(*all));
    memcpy(all + n_place, scale, n_scale * sizeof(*all));
    out->n_place = n_place;
    out->n_scale = n_scale;
    if (!(err = dlb_sim_fit_points(all, n_place + n_scale, &out->fit)))
        out->mape = dlb_sim_mape(&out->fit, all, n_place + n_scale);
    /* Held out: placements (few nodes) say nothing about 16-node steps but
     * what the model's shape extrapolates, and scalability (one replica per
     * node or more) little about several replicas sharing one node. */
    if (!err && !(err = dlb_sim_fit_points(place, n_place, &f)))
        out->mape_p_to_s = dlb_sim_mape(&f, scale, n_scale);
    if (!err && !(err = dlb_sim_fit_points(scale, n_scale, &f)))
        out->mape_s_to_p = dlb_sim_mape(&f, place, n_place);
    free(all);
    return err;
}

/* ---- profiles ----------------------------------------------------------- */

/* Fitted constants (a, b, ar, br, an, bn, g) on data/pollux/<model>, printed
 * by `dlbrain sim --fit data/pollux` and checked by
 * tests/unit/test_sim_model.c against the CSVs. */
#define FIT_CIFAR10                                                                                \
    {                                                                                              \
        0.0102476, 0.000779986, 0.0313105, 0.00474806, 0.125332, 0.00264836, 2.84497               \
    }
#define FIT_NCF                                                                                    \
    {                                                                                              \
        0.00691996, 8.3876e-07, 0.000469705, 0.00119611, 0.0132922, 0.000548479, 1.0               \
    }
#define FIT_BERT                                                                                   \
    {                                                                                              \
        0.22486, 0.0580122, 0.0187823, 0.0662036, 1.38392, 0.0094833, 2.10028                      \
    }
#define FIT_IMAGENET                                                                               \
    {                                                                                              \
        0.0570426, 0.004549, 0.057858, 0.0136348, 0.29665, 0.00662207, 2.68224                     \
    }
#define FIT_DEEPSPEECH2                                                                            \
    {                                                                                              \
        0.0178643, 0.0330833, 0.303542, 0.0848325, 0.872072, 0.00918291, 3.12538                   \
    }
#define FIT_YOLOV3                                                                                 \
    {                                                                                              \
        0.18078, 0.0265419, 9.19471e-16, 0.0531599, 0.754542, 0.0107861, 1.16209                   \
    }

/* The PS cost of a PS job, relative to its compute: T_step = T_compute x
 * (1 + beta x w x s + gamma x (w - 1)), s the busiest PS's share of the
 * variables (1/p when balanced); Optimus's synchronous speed function
 * (Peng et al., EuroSys'18) in proportion to the compute. Fitted by
 * `dlbrain sim --fit-ps data/ps` (docs/simulator.md, "PS jobs"):
 * - dense models, on TensorFlow's published distributed benchmarks with
 *   parameter servers (K80, InceptionV3, ResNet-50, ResNet-152, 1-8 worker
 *   machines, each against the same machine without a remote PS): MAPE
 *   2.36% on 15 points;
 * - embedding models, on DLRover-RM's measured throughput of a
 *   recommendation model for 4-32 workers and 6-18 PS (PVLDB 17, 2024,
 *   its model-validation figure): MAPE 6.13% on 24 points (23.6% on the
 *   figure's other 24, measured with other fixed settings).
 * Every profile takes the embedding fit: it measures the jobs DLRover's
 * Brain plans (PS training on CPU pods), and the dense fit's K80s compute 5
 * to 20 times slower than the T4s Pollux measured the compute on, so their
 * PS cost relative to the compute understates it there (on the dense fit a
 * ResNet-18 PS job would run 7x faster at 8 workers than at 1, where Pollux
 * measured 3.2x for all-reduce). The dense fit stays as the reference for
 * compute-bound models: a PS costs them 1.5% at one worker and one PS. */
#define PS_DENSE_BETA      0.0149
#define PS_DENSE_GAMMA     0.0130
#define PS_EMBEDDING_BETA  0.160
#define PS_EMBEDDING_GAMMA 0.0

int dlb_sim_ps_constants(const char *family, double *beta, double *gamma)
{
    if (!strcmp(family, "dense")) {
        *beta = PS_DENSE_BETA;
        *gamma = PS_DENSE_GAMMA;
    } else if (!strcmp(family, "embedding")) {
        *beta = PS_EMBEDDING_BETA;
        *gamma = PS_EMBEDDING_GAMMA;
    } else {
        return DLB_ERR_NOTFOUND;
    }
    return 0;
}

/* Only the speed is measured, and the PS cost (above); everything else of a
 * profile is chosen (docs/simulator.md, "What each constant rests on"):
 * dataset sizes are common public datasets' (CIFAR-10 50k, ImageNet 1.28 M,
 * ...), not those of the measured jobs; epochs and worker CPU are guesses;
 * memory sizes follow the models' parameter counts (ResNet-18 11 M, NCF an
 * embedding table of users x items, BERT base 110 M, ResNet-50 25 M,
 * DeepSpeech2 about 40 M, YOLOv3 62 M). */
#define GIB(x) ((int64_t)(x)*DLB_GIB)
#define MIB(x) ((int64_t)(x)*DLB_MIB)
static const dlb_sim_profile_t profiles[] = {
    {.name = "cifar10",
     .fit = FIT_CIFAR10,
     .dataset_size = 50000,
     .epochs = 300,
     .worker_cpu = 4.0,
     .ps_cpu_base = 1.0,
     .ps_beta = PS_EMBEDDING_BETA,
     .ps_gamma = PS_EMBEDDING_GAMMA,
     .wk_mem_base = GIB(3),
     .wk_mem_per_sample = MIB(1),
     .wk_mem_growth = GIB(1),
     .ps_mem_base = GIB(2),
     .ps_mem_growth = GIB(1),
     .variable_count = 62,
     .op_count = 3000,
     .recv_op_count = 120,
     .flops = 560000000,
     .embedding_dimension = 0},
    {.name = "ncf",
     .fit = FIT_NCF,
     .dataset_size = 25000000,
     .epochs = 40,
     .worker_cpu = 3.0,
     .ps_cpu_base = 2.0,
     .ps_beta = PS_EMBEDDING_BETA,
     .ps_gamma = PS_EMBEDDING_GAMMA,
     .wk_mem_base = GIB(2),
     .wk_mem_per_sample = 64 * 1024,
     .wk_mem_growth = GIB(1),
     .ps_mem_base = GIB(10),
     .ps_mem_growth = GIB(14),
     .variable_count = 12,
     .op_count = 600,
     .recv_op_count = 300,
     .flops = 30000000,
     .embedding_dimension = 64},
    {.name = "bert",
     .fit = FIT_BERT,
     .dataset_size = 88000,
     .epochs = 2,
     .worker_cpu = 8.0,
     .ps_cpu_base = 2.0,
     .ps_beta = PS_EMBEDDING_BETA,
     .ps_gamma = PS_EMBEDDING_GAMMA,
     .wk_mem_base = GIB(6),
     .wk_mem_per_sample = MIB(200),
     .wk_mem_growth = GIB(2),
     .ps_mem_base = GIB(4),
     .ps_mem_growth = GIB(1),
     .variable_count = 200,
     .op_count = 12000,
     .recv_op_count = 400,
     .flops = 22000000000,
     .embedding_dimension = 768},
    {.name = "imagenet",
     .fit = FIT_IMAGENET,
     .dataset_size = 1281167,
     .epochs = 20,
     .worker_cpu = 8.0,
     .ps_cpu_base = 2.0,
     .ps_beta = PS_EMBEDDING_BETA,
     .ps_gamma = PS_EMBEDDING_GAMMA,
     .wk_mem_base = GIB(6),
     .wk_mem_per_sample = MIB(6),
     .wk_mem_growth = GIB(2),
     .ps_mem_base = GIB(4),
     .ps_mem_growth = GIB(2),
     .variable_count = 161,
     .op_count = 8000,
     .recv_op_count = 200,
     .flops = 4100000000,
     .embedding_dimension = 0},
    {.name = "deepspeech2",
     .fit = FIT_DEEPSPEECH2,
     .dataset_size = 280000,
     .epochs = 2,
     .worker_cpu = 6.0,
     .ps_cpu_base = 1.5,
     .ps_beta = PS_EMBEDDING_BETA,
     .ps_gamma = PS_EMBEDDING_GAMMA,
     .wk_mem_base = GIB(5),
     .wk_mem_per_sample = MIB(60),
     .wk_mem_growth = GIB(3),
     .ps_mem_base = GIB(3),
     .ps_mem_growth = GIB(1),
     .variable_count = 80,
     .op_count = 5000,
     .recv_op_count = 160,
     .flops = 9000000000,
     .embedding_dimension = 0},
    {.name = "yolov3",
     .fit = FIT_YOLOV3,
     .dataset_size = 120000,
     .epochs = 8,
     .worker_cpu = 8.0,
     .ps_cpu_base = 1.5,
     .ps_beta = PS_EMBEDDING_BETA,
     .ps_gamma = PS_EMBEDDING_GAMMA,
     .wk_mem_base = GIB(6),
     .wk_mem_per_sample = MIB(20),
     .wk_mem_growth = GIB(2),
     .ps_mem_base = GIB(4),
     .ps_mem_growth = GIB(1),
     .variable_count = 222,
     .op_count = 9000,
     .recv_op_count = 220,
     .flops = 65000000000,
     .embedding_dimension = 0},
    {.name = NULL},
};

const dlb_sim_profile_t *dlb_sim_profiles(size_t *n)
{
    if (n)
        *n = sizeof(profiles) / sizeof(profiles[0]) - 1;
    return profiles;
}

static const dlb_sim_profile_t *profile_named(const char *name)
{
    for (const dlb_sim_profile_t *p = profiles; p->name; p++)
        if (!strcasecmp(p->name, name))
            return p;
    return NULL;
}

const dlb_sim_profile_t *dlb_sim_profile_find(const char *model, int *known)
{
    const char *sep = strchr(model, DLB_SIM_PROFILE_SEP);
    const dlb_sim_profile_t *p = !sep          ? profile_named(model)
                                 : sep > model ? profile_named(sep + 1)
                                               : NULL;

    if (known)
        *known = p != NULL;
    return p ? p : &profiles[0];
}

int dlb_sim_profile_check(const char *model, char *errstr, size_t errstr_size)
{
    const char *sep = strchr(model, DLB_SIM_PROFILE_SEP);
    char names[256] = "";
    size_t off = 0;
    int known;

    dlb_sim_profile_find(model, &known);
    if (known)
        return 0;
    for (const dlb_sim_profile_t *p = profiles; p->name && off < sizeof(names); p++)
        off += (size_t)snprintf(names + off, sizeof(names) - off, "%s%s", p == profiles ? "" : ", ",
                                p->name);
    if (!sep)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                          "model '%s' has no speed measurements (measured: %s); to run it at "
                          "another model's speed, name that profile: %s@bert",
                          model, names, model);
    if (sep == model)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                          "model '%s': no name before '@' (MODEL@PROFILE)", model);
    return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                      "model '%s': '%s' is not a profile (profiles: %s)", model, sep + 1, names);
}

/* ---- a job's speed ------------------------------------------------------ */

/* The PS's share of the workers' compute work: DLRover-RM's month of
 * production jobs (its warm-start figure, dlrover docs/figures/dlrover_rm/
 * warm_start.png) shows the PS holding 10-15% of the job's worker CPU; the
 * middle of that. */
#define PS_CPU_SHARE 0.125

void dlb_sim_speed(const dlb_sim_speed_in_t *in, dlb_sim_speed_t *out)
{
    const dlb_sim_profile_t *p = in->prof;
    const dlb_sim_fit_t *f = &p->fit;
    double tc, t0, load = 0, work, starve, slow, smax = 0;
    int w = in->workers > 0 ? in->workers : 1;

    memset(out, 0, sizeof(*out));
    /* A worker with fewer cores than it keeps busy computes need/request
     * times slower; the synchronous step waits for the slowest worker. */
    starve = in->worker_cpu_req > 0 && in->worker_cpu_req < p->worker_cpu
                 ? p->worker_cpu / in->worker_cpu_req
                 : 1.0;
    slow = in->slowest > 1 ? in->slowest : 1.0;
    for (int i = 0; i < in->ps; i++)
        if (in->ps_share[i] > smax)
            smax = in->ps_share[i];
    if (p->observed && p->observed->n) {
        /* From history: the step the job showed at this worker count, its
         * compute and network together, stretched as a whole. */
        tc = w * in->local_bsz / dlb_sim_curve_rate(p->observed, w);
        out->t_compute = tc * starve;
        t0 = out->t_compute * slow;
        /* PS core-seconds per step, as observed per 1000 samples/s. */
        work = p->ps_cpu_per_ksample * w * in->local_bsz / 1000.0;
    } else {
        tc = f->a + f->b * in->local_bsz;
        out->t_compute = tc * starve;
        t0 = out->t_compute * slow;
        if (in->ps <= 0) {
            /* All-reduce: Pollux's model as measured, the replicas packed
             * onto nodes of its testbed's size. */
            int nodes = (w + DLB_SIM_NODE_GPUS - 1) / DLB_SIM_NODE_GPUS;
            double tn = w <= 1 ? 0 : nodes <= 1 ? f->ar + f->br * w : f->an + f->bn * w;

            if (tn > 0)
                t0 = pow(pow(t0, f->g) + pow(tn, f->g), 1.0 / f->g);
        } else {
            /* PS: compute, plus the pushes and pulls the busiest PS serves
             * (w x its share of the variables; w/p when balanced) and the
             * synchronisation of w workers, in proportion to the compute:
             * Optimus's synchronous form, fitted on published PS
             * measurements (ps_beta, ps_gamma: PS_DENSE, PS_EMBEDDING). */
            t0 *= 1.0 + p->ps_beta * w * smax + p->ps_gamma * (w - 1);
        }
        /* The PS do PS_CPU_SHARE of the workers' compute work (DLRover-RM:
         * PS CPU is 10-15% of the workers' in production). */
        work = PS_CPU_SHARE * w * p->worker_cpu * tc;
    }
    /* A PS serves share x work core-seconds per step on the cores its
     * share of the base load leaves it; the synchronous step waits for
     * the busiest, T_step = max(T_model, T_ps). */
    out->step_time = t0;
    for (int i = 0; i < in->ps; i++) {
        double cpu = in->ps_cpu_req[i] > 0 ? in->ps_cpu_req[i] : 0.1;
        double s = in->ps_share[i], free_cpu = cpu - s * p->ps_cpu_base, t_ps;

        /* The base load alone over the CPU: the PS crawls at 5% of its CPU. */
        if (free_cpu < 0.05 * cpu)
            free_cpu = 0.05 * cpu;
        t_ps = s * work / free_cpu;
        if (t_ps > out->step_time)
            out->step_time = t_ps;
    }
    out->samples_per_s = w * in->local_bsz / out->step_time;
    out->ps_demand = in->ps > 0 ? p->ps_cpu_base + work / out->step_time : 0;
    for (int i = 0; i < in->ps; i++) {
        double cpu = in->ps_cpu_req[i] > 0 ? in->ps_cpu_req[i] : 0.1;
        double l = in->ps_share[i] * (p->ps_cpu_base + work / t0) / cpu;

        if (l > load)
            load = l;
    }
    out->ps_load = load;
}

int dlb_sim_predict(const char *spec, dlb_sim_speed_t *out, char *errstr, size_t errstr_size)
{
    char model[64], rest[128], *end;
    const char *colon = strchr(spec, ':');
    const dlb_sim_profile_t *prof;
    double bsz, share[DLB_SIM_MAX_PS], cpu[DLB_SIM_MAX_PS];
    long workers, ps;
    int err, known;

    memset(out, 0, sizeof(*out));
    if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof(model) ||
        strlen(colon + 1) >= sizeof(rest))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                          "'%s': expected MODEL:WORKERS:PS:LOCAL_BSZ", spec);
    snprintf(model, sizeof(model), "%.*s", (int)(colon - spec), spec);
    snprintf(rest, sizeof(rest), "%s", colon + 1);
    if ((err = dlb_sim_profile_check(model, errstr, errstr_size)))
        return err;
    prof = dlb_sim_profile_find(model, &known);
    errno = 0;
    workers = strtol(rest, &end, 10);
    if (errno || end == rest || *end != ':' || workers < 1 || workers > 4096)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                          "'%s': WORKERS must be a whole number from 1 to 4096", spec);
    ps = strtol(end + 1, &end, 10);
    if (errno || *end != ':' || ps < 0 || ps > DLB_SIM_MAX_PS)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                          "'%s': PS must be a whole number from 0 (all-reduce) to %d", spec,
                          DLB_SIM_MAX_PS);
    bsz = strtod(end + 1, &end);
    if (errno || *end || !(bsz > 0) || bsz > 1e7)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                          "'%s': LOCAL_BSZ must be a number of samples above 0", spec);
    for (long i = 0; i < ps; i++) {
        share[i] = 1.0 / (double)ps;
        cpu[i] = 1e6; /* enough: the PS's own cost is in the model, not a shortage */
    }
    dlb_sim_speed_in_t in = {prof, (int)workers, bsz, prof->worker_cpu, 1, (int)ps, share, cpu};
    dlb_sim_speed(&in, out);
    return 0;
}
