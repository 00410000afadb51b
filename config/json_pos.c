/* json_pos.c: finds where a key path sits in raw JSON text, because cJSON
 * keeps no line numbers and every config error must name the line of the
 * offending key. A small scanner of its own walks the text once per lookup;
 * configs are a few KiB, and lookups happen only on errors. */
#include "config_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

struct scan {
	const char *p, *end;
	long line;
};

static void scan_ws(struct scan *s)
{
	while (s->p < s->end && isspace((unsigned char)*s->p)) {
		if (*s->p == '\n')
			s->line++;
		s->p++;
	}
}

/* Skips a string starting at '"'; key and klen receive its raw contents. */
static bool scan_string(struct scan *s, const char **key, size_t *klen)
{
	const char *start;

	if (s->p >= s->end || *s->p != '"')
		return false;
	start = ++s->p;
	while (s->p < s->end && *s->p != '"') {
		if (*s->p == '\\' && s->p + 1 < s->end)
			s->p++;
		if (*s->p == '\n')
			s->line++;
		s->p++;
	}
	if (s->p >= s->end)
		return false;
	if (key != NULL) {
		*key = start;
		*klen = (size_t)(s->p - start);
	}
	s->p++;
	return true;
}

static bool scan_value(struct scan *s, int depth)
{
	char open, close;

	scan_ws(s);
	if (s->p >= s->end || depth > 256)
		return false;
	if (*s->p == '"')
		return scan_string(s, NULL, NULL);
	if (*s->p != '{' && *s->p != '[') {
		/* numbers and literals run to the next delimiter */
		while (s->p < s->end && !strchr(",]} \t\r\n", *s->p))
			s->p++;
		return true;
	}
	open = *s->p;
	close = open == '{' ? '}' : ']';
	s->p++;
	scan_ws(s);
	if (s->p < s->end && *s->p == close) {
		s->p++;
		return true;
	}
	for (;;) {
		scan_ws(s);
		if (open == '{') {
			if (!scan_string(s, NULL, NULL))
				return false;
			scan_ws(s);
			if (s->p >= s->end || *s->p != ':')
				return false;
			s->p++;
		}
		if (!scan_value(s, depth + 1))
			return false;
		scan_ws(s);
		if (s->p >= s->end)
			return false;
		if (*s->p == close) {
			s->p++;
			return true;
		}
		if (*s->p != ',')
			return false;
		s->p++;
	}
}

/* Walks path; returns the line of the deepest component found and sets
 * *found when the whole path was there. */
static long json_walk(const char *text, size_t len, const char *path, bool *found)
{
	struct scan s = { text, text + len, 1 };
	long best;
	const char *comp = path;

	*found = false;
	scan_ws(&s);
	best = s.line;
	if (*path == '\0') {
		*found = true;
		return best;
	}
	while (*comp != '\0') {
		const char *dot = strchr(comp, '.');
		size_t clen = dot ? (size_t)(dot - comp) : strlen(comp);
		bool hit = false;

		scan_ws(&s);
		if (s.p >= s.end)
			return best;
		if (*s.p == '{') {
			s.p++;
			for (;;) {
				const char *k;
				size_t kl;
				long kline;

				scan_ws(&s);
				kline = s.line;
				if (!scan_string(&s, &k, &kl))
					return best;
				scan_ws(&s);
				if (s.p >= s.end || *s.p != ':')
					return best;
				s.p++;
				if (kl == clen && memcmp(k, comp, clen) == 0) {
					best = kline;
					hit = true;
					break;
				}
				if (!scan_value(&s, 0))
					return best;
				scan_ws(&s);
				if (s.p >= s.end || *s.p != ',')
					return best;
				s.p++;
			}
		} else if (*s.p == '[') {
			char *e;
			long idx = strtol(comp, &e, 10);

			if (e != comp + clen || idx < 0)
				return best;
			s.p++;
			for (long i = 0;; i++) {
				scan_ws(&s);
				if (s.p >= s.end || *s.p == ']')
					return best;
				if (i == idx) {
					best = s.line;
					hit = true;
					break;
				}
				if (!scan_value(&s, 0))
					return best;
				scan_ws(&s);
				if (s.p >= s.end || *s.p != ',')
					return best;
				s.p++;
			}
		}
		if (!hit)
			return best;
		comp = dot ? dot + 1 : comp + clen;
		if (dot == NULL)
			break;
	}
	*found = true;
	return best;
}

long ema_config_json_line(const char *text, size_t len, const char *path)
{
	bool found;
	long line;

	if (text == NULL)
		return 0;
	line = json_walk(text, len, path, &found);
	return found ? line : 0;
}

long ema_config_json_near_line(const char *text, size_t len, const char *path)
{
	bool found;

	if (text == NULL)
		return 0;
	return json_walk(text, len, path, &found);
}

void ema_config_json_pos(const char *text, size_t off, long *line, long *col)
{
	long l = 1, c = 1;

	for (size_t i = 0; i < off && text[i] != '\0'; i++) {
		if (text[i] == '\n') {
			l++;
			c = 1;
		} else {
			c++;
		}
	}
	*line = l;
	*col = c;
}
