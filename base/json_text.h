/* json_text.h: text that crosses ema's edges, held to one standard. Every
 * JSON file ema writes goes through one string writer, so that it is
 * valid JSON (UTF-8, control characters escaped) whatever bytes a command
 * line or a path holds; every JSON text a user gives is checked for what
 * the parser (cJSON) lets through silently: raw control characters and
 * NUL bytes, which cut a string short, and bytes that are not UTF-8. */
#ifndef EMA_JSON_TEXT_H
#define EMA_JSON_TEXT_H

#include <stddef.h>
#include <stdio.h>

/* The length (1 to 4) of the well-formed UTF-8 sequence that starts at s
 * (n bytes available), or 0 when it is not one: a stray continuation
 * byte, a truncated or overlong sequence, a surrogate, past U+10FFFF. */
size_t ema_utf8_len(const unsigned char *s, size_t n);

/* Whether s (NUL-terminated) is well-formed UTF-8 without control
 * characters (below U+0020, DEL, U+0080..U+009F): a string that can be a
 * name, a path or a value in a configuration. */
int ema_text_is_clean(const char *s);

/* Writes s as a JSON string, quotes included: '"' and '\' escaped,
 * control characters as \n, \t, \r, \b, \f or \u00XX, DEL as \u007f, and
 * a byte that is not part of well-formed UTF-8 as \u00XX, the character
 * of that number (its Latin-1 reading): the output is always valid JSON,
 * and a string that is clean UTF-8 reads back the same. */
void ema_json_put_string(FILE *f, const char *s);

/* Checks JSON text (len bytes, not counting a terminating NUL) for what
 * cJSON accepts but JSON and ema do not: a NUL byte anywhere, a raw
 * control character inside a string, an escaped NUL (\u0000) inside a
 * string, bytes that are not UTF-8. Returns NULL when there is none, else
 * what is wrong (a sentence for the user), with *off the offset of the
 * offending byte. */
const char *ema_json_check_text(const char *text, size_t len, size_t *off);

#endif
