/* dlb_utf8_seq/check against the boundaries of Unicode Table 3-7: every
 * well-formed first and last sequence of each row, and what PostgreSQL
 * refuses (overlongs, surrogates, past U+10FFFF, cut sequences). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "utf8.h"

static size_t seq(const char *s)
{
    return dlb_utf8_seq((const unsigned char *)s, strlen(s));
}

static void test_well_formed(void **state)
{
    (void)state;
    assert_int_equal(seq("A"), 1);
    assert_int_equal(seq("\x7f"), 1);
    assert_int_equal(seq("\xc2\x80"), 2);         /* U+0080 */
    assert_int_equal(seq("\xdf\xbf"), 2);         /* U+07FF */
    assert_int_equal(seq("\xe0\xa0\x80"), 3);     /* U+0800 */
    assert_int_equal(seq("\xed\x9f\xbf"), 3);     /* U+D7FF */
    assert_int_equal(seq("\xee\x80\x80"), 3);     /* U+E000 */
    assert_int_equal(seq("\xef\xbf\xbf"), 3);     /* U+FFFF */
    assert_int_equal(seq("\xf0\x90\x80\x80"), 4); /* U+10000 */
    assert_int_equal(seq("\xf4\x8f\xbf\xbf"), 4); /* U+10FFFF */
    assert_int_equal(dlb_utf8_check("模型-ü", strlen("模型-ü")), strlen("模型-ü"));
    assert_int_equal(dlb_utf8_check("", 0), 0);
}

static void test_ill_formed(void **state)
{
    (void)state;
    assert_int_equal(seq("\x80"), 0);             /* a continuation byte first */
    assert_int_equal(seq("\xc0\xaf"), 0);         /* overlong '/' */
    assert_int_equal(seq("\xc1\xbf"), 0);         /* overlong */
    assert_int_equal(seq("\xc3\x28"), 0);         /* the review's job uid */
    assert_int_equal(seq("\xe0\x9f\xbf"), 0);     /* overlong U+07FF */
    assert_int_equal(seq("\xed\xa0\x80"), 0);     /* surrogate U+D800 */
    assert_int_equal(seq("\xed\xbf\xbf"), 0);     /* surrogate U+DFFF */
    assert_int_equal(seq("\xf0\x8f\xbf\xbf"), 0); /* overlong U+FFFF */
    assert_int_equal(seq("\xf4\x90\x80\x80"), 0); /* U+110000 */
    assert_int_equal(seq("\xf5\x80\x80\x80"), 0);
    assert_int_equal(seq("\xff"), 0);
    /* Cut short: the bytes left end inside the sequence. */
    assert_int_equal(dlb_utf8_seq((const unsigned char *)"\xe2\x82\xac", 2), 0);
    assert_int_equal(dlb_utf8_seq((const unsigned char *)"A", 0), 0);
    /* check names the first bad byte. */
    assert_int_equal(dlb_utf8_check("ab\xc3\x28z", 5), 2);
    assert_int_equal(dlb_utf8_check("\xe2\x82", 2), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_well_formed),
        cmocka_unit_test(test_ill_formed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
