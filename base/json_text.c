/* json_text.c: UTF-8 checks, the one JSON string writer, and the check of
 * JSON text a user gives (json_text.h says why). */
#include "json_text.h"

#include <stdbool.h>
#include <string.h>

size_t ema_utf8_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t len;
	unsigned cp, min;

	if (n == 0)
		return 0;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		cp = c & 0x1f;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		cp = c & 0x0f;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		cp = c & 0x07;
		min = 0x10000;
	} else {
		return 0; /* a continuation byte, 0xc0/0xc1 (overlong), past 0xf4 */
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/* A C1 control character, U+0080..U+009F: 0xc2 0x80..0x9f in UTF-8. */
static bool is_c1(const unsigned char *s, size_t len)
{
	return len == 2 && s[0] == 0xc2 && s[1] <= 0x9f;
}

int ema_text_is_clean(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);

	while (n > 0) {
		size_t len = ema_utf8_len(p, n);

		if (len == 0 || *p < 0x20 || *p == 0x7f || is_c1(p, len))
			return 0;
		p += len;
		n -= len;
	}
	return 1;
}

void ema_json_put_string(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);

	fputc('"', f);
	while (n > 0) {
		unsigned c = *p;
		size_t len = ema_utf8_len(p, n);

		if (c == '"' || c == '\\') {
			fputc('\\', f);
			fputc((int)c, f);
		} else if (c == '\n') {
			fputs("\\n", f);
		} else if (c == '\t') {
			fputs("\\t", f);
		} else if (c == '\r') {
			fputs("\\r", f);
		} else if (c == '\b') {
			fputs("\\b", f);
		} else if (c == '\f') {
			fputs("\\f", f);
		} else if (c < 0x20 || c == 0x7f || len == 0) {
			fprintf(f, "\\u%04x", c);
			len = 1;
		} else {
			fwrite(p, 1, len, f);
		}
		if (len == 0)
			len = 1;
		p += len;
		n -= len;
	}
	fputc('"', f);
}

static bool is_hex(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

const char *ema_json_check_text(const char *text, size_t len, size_t *off)
{
	const unsigned char *t = (const unsigned char *)text;
	bool in_string = false;

	for (size_t i = 0; i < len;) {
		unsigned c = t[i];
		size_t n;

		*off = i;
		if (c == 0)
			return "a NUL byte: JSON text cannot hold one (the rest of the file would be "
			       "ignored)";
		if (c >= 0x80) {
			n = ema_utf8_len(t + i, len - i);
			if (n == 0)
				return "a byte that is not UTF-8 (JSON text is UTF-8; save the file as "
				       "UTF-8)";
			i += n;
			continue;
		}
		if (!in_string) {
			if (c == '"')
				in_string = true;
			i++;
			continue;
		}
		if (c == '"') {
			in_string = false;
		} else if (c < 0x20) {
			return "a raw control character inside a string (JSON writes it escaped: "
			       "\\n, \\t, \\uXXXX)";
		} else if (c == '\\' && i + 1 < len) {
			if (t[i + 1] == 'u' && i + 5 < len && is_hex(t[i + 2]) && is_hex(t[i + 3]) &&
			    is_hex(t[i + 4]) && is_hex(t[i + 5]) &&
			    memcmp(t + i + 2, "0000", 4) == 0)
				return "\\u0000 (a NUL character) inside a string: it would cut the "
				       "string short";
			/* the escaped character is not a quote that ends the string */
			i++;
			if (t[i] < 0x20)
				return "a raw control character inside a string (JSON writes it "
				       "escaped: \\n, \\t, \\uXXXX)";
		}
		i++;
	}
	return NULL;
}
