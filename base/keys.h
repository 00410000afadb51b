/* keys.h: the descriptor of one configuration key (name, type, where it
 * lives in its struct, range, choices), of which every config file format
 * is a table. config/ parses, overrides (--set), checks and writes from
 * these tables; they live in base/ so that a policy can declare a table of
 * its own knobs without depending on the configuration layer. */
#ifndef EMA_KEYS_H
#define EMA_KEYS_H

#include <stddef.h>

enum ema_config_type {
	EMA_CFG_STR,     /* char[size] */
	EMA_CFG_PATH,    /* char[size]; relative paths resolve against the file's folder */
	EMA_CFG_INT,     /* int, integral JSON number in [min, max] */
	EMA_CFG_U64,     /* uint64_t, integral, in [min, max] (max <= 2^53) */
	EMA_CFG_DBL,     /* double, finite, in [min, max] */
	EMA_CFG_BOOL,    /* bool */
	EMA_CFG_ENUM,    /* an int-sized enum: the index of the name in names[] */
	EMA_CFG_CHOICE,  /* char[size] holding one of names[] */
	EMA_CFG_STRLIST, /* char[max][size] of names, count int at off2 */
	EMA_CFG_CURVE,   /* struct ema_curve_point[max], count int at off2 */
	EMA_CFG_OBJ,     /* nested struct described by sub */
	EMA_CFG_ARRAY,   /* elements of size bytes described by sub, count int at off2 */
	EMA_CFG_HW,      /* profile name/path char[size] at off, struct ema_hw_profile at off2 */
	EMA_CFG_MODEL    /* model name char[size] at off, struct ema_model at off2 */
};

enum {
	EMA_CFG_REQUIRED = 1u << 0, /* must appear in the object */
	EMA_CFG_MIN_OPEN = 1u << 1, /* value > min rather than >= min */
	EMA_CFG_POW2 = 1u << 2,     /* a power of two (page sizes) */
	EMA_CFG_NONEMPTY = 1u << 3, /* strings: not "" */
	EMA_CFG_PERCENT = 1u << 4,  /* numbers: --set also takes a percentage, "+20%" = 0.2 */
	EMA_CFG_OR_MINUS_ONE = 1u << 5 /* numbers: -1 too, besides [min, max] (a meaning of its own) */
};

struct ema_config_key {
	const char *key;                 /* JSON key = struct field name */
	enum ema_config_type type;
	size_t off;
	size_t size;                     /* string buffer, array element or object bytes */
	size_t off2;                     /* count (arrays) or resolved struct (HW, MODEL) */
	double min, max;                 /* numbers: range; lists: element count */
	unsigned flags;
	const char *const *names;        /* ENUM, CHOICE: NULL-terminated */
	const struct ema_config_key *sub; /* OBJ and ARRAY elements */
	void (*init)(void *elem, int index); /* ARRAY: defaults of a new element */
	/* For the key reference (doc/keys.md, ema_config_write_reference):
	 * the unit ("" when none) and one or two sentences on what the key
	 * does and who reads it. Last, so that a row lists them after the
	 * mechanics; every row has both (tests/test_keys checks it). */
	const char *unit;
	const char *help;
};

/* Rows of a policy's own knob table (policies/policy.h): an int or a
 * double field of struct S in [lo, hi], and the terminator. */
#define EMA_KNOB_INT(S, field, lo, hi, text) \
	{ #field, EMA_CFG_INT, offsetof(S, field), 0, 0, lo, hi, 0, NULL, NULL, NULL, "", text }
#define EMA_KNOB_DBL(S, field, lo, hi, text) \
	{ #field, EMA_CFG_DBL, offsetof(S, field), 0, 0, lo, hi, 0, NULL, NULL, NULL, "", text }
#define EMA_KNOB_END { NULL, 0, 0, 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NULL }

#endif
