/* sortd.h: sorting doubles in linear time (the quantiles of summary.csv
 * sort a value per request several times per tenant and policy). */
#ifndef EMA_SORTD_H
#define EMA_SORTD_H

#include <stddef.h>

/* Sorts v ascending (NaN-free input: the order of a comparison sort; -0
 * before +0). Returns 0, or EMA_ERR_NOMEM, with v then left as it was. */
int ema_sort_doubles(double *v, size_t n);

#endif
