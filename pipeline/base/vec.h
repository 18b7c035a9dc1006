/* Growable arrays: one growth policy and one place for the size checks, for
 * the arrays every module keeps in its own structs (a pointer, a count and,
 * where the struct has one, a capacity). Pass the array as (void **)&s->items
 * and elem_size as sizeof(*s->items); elem_size is never 0. */
#ifndef DLB_VEC_H
#define DLB_VEC_H

#include <stddef.h>

/** @brief Make room for need elements in the array *p, which has room for
 *         *cap: *cap doubles (from 8) until need fits, so n appends copy
 *         O(n) elements in all. The new room is not zeroed.
 *  @param p          the array, NULL while *cap is 0
 *  @param cap        the elements *p has room for
 *  @param need       the elements it must have room for (e.g. cnt + 1)
 *  @param elem_size  bytes of one element
 *  @returns 0, or DLB_ERR_NOMEM when need elements do not fit in a size_t
 *           or realloc fails: *p and *cap are then unchanged. */
int dlb_vec_reserve(void **p, size_t *cap, size_t need, size_t elem_size);

/** @brief Append one zeroed element to the array *p of *cnt elements that has
 *         no capacity field (a struct shared with the codecs or a public
 *         header): it grows by exactly one element.
 *  @returns the new element, counted in *cnt, or NULL (out of memory) with
 *           *p and *cnt unchanged. */
void *dlb_vec_push(void **p, size_t *cnt, size_t elem_size);

/** @brief As dlb_vec_push(), but the zeroed element goes at index i
 *         (i <= *cnt) of a kept order, the elements from i on moving up one.
 *  @returns the new element, or NULL with *p and *cnt unchanged. */
void *dlb_vec_insert(void **p, size_t *cnt, size_t i, size_t elem_size);

#endif
