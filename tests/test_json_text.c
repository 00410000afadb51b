/* test_json_text.c: base/json_text and the escaping of error messages:
 * UTF-8 told apart from what is not (by hand, at every edge: overlong
 * forms, surrogates, past U+10FFFF, truncated sequences), the JSON string
 * writer (every output valid JSON that reads back the same, checked with
 * cJSON over every byte and over random strings), the checker of JSON text
 * (each fault at its offset), and messages that quote input shown without
 * what a terminal would act on. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ema_error.h"
#include "json_text.h"
#include "test_main.h"

static size_t len_of(const char *s, size_t n)
{
	return ema_utf8_len((const unsigned char *)s, n);
}

static void test_utf8(void)
{
	CU_ASSERT_EQUAL(len_of("a", 1), 1);
	CU_ASSERT_EQUAL(len_of("\xc3\xa9", 2), 2);          /* é */
	CU_ASSERT_EQUAL(len_of("\xe2\x86\x92", 3), 3);      /* → */
	CU_ASSERT_EQUAL(len_of("\xf0\x9f\x98\x80", 4), 4);  /* U+1F600 */
	CU_ASSERT_EQUAL(len_of("\xf4\x8f\xbf\xbf", 4), 4);  /* U+10FFFF */
	CU_ASSERT_EQUAL(len_of("\xc2\x80", 2), 2);          /* U+0080 */
	CU_ASSERT_EQUAL(len_of("\xe0\xa0\x80", 3), 3);      /* U+0800 */
	CU_ASSERT_EQUAL(len_of("\xf0\x90\x80\x80", 4), 4);  /* U+10000 */
	/* not UTF-8 */
	CU_ASSERT_EQUAL(len_of("\x80", 1), 0);              /* a stray continuation */
	CU_ASSERT_EQUAL(len_of("\xc0\xaf", 2), 0);          /* overlong '/' */
	CU_ASSERT_EQUAL(len_of("\xc1\xbf", 2), 0);
	CU_ASSERT_EQUAL(len_of("\xe0\x9f\xbf", 3), 0);      /* overlong U+07FF */
	CU_ASSERT_EQUAL(len_of("\xf0\x8f\xbf\xbf", 4), 0);  /* overlong U+FFFF */
	CU_ASSERT_EQUAL(len_of("\xed\xa0\x80", 3), 0);      /* surrogate U+D800 */
	CU_ASSERT_EQUAL(len_of("\xed\xbf\xbf", 3), 0);      /* surrogate U+DFFF */
	CU_ASSERT_EQUAL(len_of("\xf4\x90\x80\x80", 4), 0);  /* U+110000 */
	CU_ASSERT_EQUAL(len_of("\xf5\x80\x80\x80", 4), 0);
	CU_ASSERT_EQUAL(len_of("\xff", 1), 0);
	CU_ASSERT_EQUAL(len_of("\xc3", 1), 0);              /* truncated */
	CU_ASSERT_EQUAL(len_of("\xe2\x86", 2), 0);
	CU_ASSERT_EQUAL(len_of("\xe2\x41\x92", 3), 0);      /* a non-continuation inside */
	CU_ASSERT(ema_text_is_clean("h200x2 caf\xc3\xa9 \xe2\x86\x92"));
	CU_ASSERT(ema_text_is_clean(""));
	CU_ASSERT(!ema_text_is_clean("a\tb"));
	CU_ASSERT(!ema_text_is_clean("a\rb"));
	CU_ASSERT(!ema_text_is_clean("a\x7f"));
	CU_ASSERT(!ema_text_is_clean("a\xc2\x9b" "2J"));       /* C1 CSI */
	CU_ASSERT(!ema_text_is_clean("a\xff"));
}

static bool is_utf8(const char *s)
{
	size_t k = 0, len = strlen(s);

	while (k < len) {
		size_t m = ema_utf8_len((const unsigned char *)s + k, len - k);

		if (m == 0)
			return false;
		k += m;
	}
	return true;
}

/* s written by the writer, parsed back by cJSON. */
static char *round_trip(const char *s, char **written)
{
	char *buf = NULL, *back = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	cJSON *v;

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	ema_json_put_string(f, s);
	fclose(f);
	v = cJSON_ParseWithLength(buf, len);
	CU_ASSERT_PTR_NOT_NULL(v);
	if (v != NULL && cJSON_IsString(v))
		back = strdup(v->valuestring);
	cJSON_Delete(v);
	*written = buf;
	return back;
}

static void test_writer(void)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "plain", "\"plain\"" },
		{ "a\"b\\c", "\"a\\\"b\\\\c\"" },
		{ "a\tb\nc\rd\be\ff", "\"a\\tb\\nc\\rd\\be\\ff\"" },
		{ "\x01\x1b[2J\x1f\x7f", "\"\\u0001\\u001b[2J\\u001f\\u007f\"" },
		{ "caf\xc3\xa9 \xe2\x86\x92", "\"caf\xc3\xa9 \xe2\x86\x92\"" },
		/* not UTF-8: each byte as the character of its number */
		{ "a\xff" "b\xc3", "\"a\\u00ffb\\u00c3\"" },
		{ "\xed\xa0\x80", "\"\\u00ed\\u00a0\\u0080\"" },
	};
	uint64_t x = 0x9e3779b97f4a7c15ULL;

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *w, *back = round_trip(cases[i].in, &w);

		CU_ASSERT_STRING_EQUAL(w, cases[i].out);
		if (strcmp(w, cases[i].out) != 0)
			printf("\n  case %zu: got %s\n", i, w);
		CU_ASSERT_PTR_NOT_NULL(back);
		if (back != NULL)
			CU_ASSERT_EQUAL(strcmp(back, cases[i].in) == 0, is_utf8(cases[i].in));
		free(w);
		free(back);
	}
	/* every byte alone, and random strings of any bytes: always JSON; a
	 * string of UTF-8 reads back as it was */
	for (int c = 1; c < 256; c++) {
		char s[2] = { (char)c, '\0' }, *w, *back = round_trip(s, &w);

		CU_ASSERT_PTR_NOT_NULL(back);
		if (c < 0x80)
			CU_ASSERT(back != NULL && strcmp(back, s) == 0);
		free(w);
		free(back);
	}
	for (int round = 0; round < 2000; round++) {
		char s[24], *w, *back;
		int n = (int)(x % 23);

		for (int i = 0; i < n; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			s[i] = (char)(1 + x % 255);
		}
		s[n] = '\0';
		back = round_trip(s, &w);
		CU_ASSERT_PTR_NOT_NULL(back);
		if (back != NULL && is_utf8(s))
			CU_ASSERT_STRING_EQUAL(back, s);
		free(w);
		free(back);
	}
}

static void test_check_text(void)
{
	static const struct {
		const char *text;
		size_t len;
		long off;       /* -1: clean */
		const char *why;
	} cases[] = {
		{ "{\"a\": \"b\"}", 0, -1, NULL },
		{ "{\"a\": \"caf\xc3\xa9\", \"b\": \"\\t\\u0041\\\"\\\\\"}", 0, -1, NULL },
		{ "{\n\t\"a\": 1\r\n}", 0, -1, NULL },       /* whitespace outside strings */
		{ "{\"a\": \"b\tc\"}", 0, 8, "a raw control character inside a string" },
		{ "{\"a\": \"b\nc\"}", 0, 8, "a raw control character inside a string" },
		{ "{\"a\tb\": 1}", 0, 3, "a raw control character inside a string" },
		{ "{\"a\": \"b\\u0000c\"}", 0, 8, "\\u0000 (a NUL character)" },
		{ "{\"a\": \"b\\\\u0000c\"}", 0, -1, NULL },   /* an escaped backslash, then text */
		{ "{\"a\": \"b\\u00001\"}", 0, 8, "\\u0000" },
		{ "{\"a\": \"b\\\"\tc\"}", 0, 10, "a raw control character" },
		{ "{\"a\": 1}\0{\"b\": 2}", 17, 8, "a NUL byte" },
		{ "{\"a\": \"\xff\"}", 0, 7, "a byte that is not UTF-8" },
		{ "{\"a\": \"\xc3\"}", 0, 7, "a byte that is not UTF-8" },
		{ "{\"a\": 1, \xc3\xa9: 2}", 0, -1, NULL },     /* malformed, but UTF-8: cJSON's to refuse */
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		size_t off = 0, len = cases[i].len ? cases[i].len : strlen(cases[i].text);
		const char *why = ema_json_check_text(cases[i].text, len, &off);

		if (cases[i].off < 0) {
			CU_ASSERT_PTR_NULL(why);
			continue;
		}
		CU_ASSERT_PTR_NOT_NULL(why);
		if (why == NULL)
			continue;
		CU_ASSERT_EQUAL((long)off, cases[i].off);
		CU_ASSERT_PTR_NOT_NULL(strstr(why, cases[i].why));
		if ((long)off != cases[i].off || strstr(why, cases[i].why) == NULL)
			printf("\n  case %zu: at %zu: %s\n", i, off, why);
	}
}

/* Every error message quotes input as the user can read it, on one line,
 * with nothing a terminal acts on. */
static void test_error_escape(void)
{
	struct ema_error err = { 0 };
	char buf[64];

	ema_error_at(&err, "t.csv", 2, "bad time '%s'", "\x1b[31mred\x1b[0m");
	CU_ASSERT_STRING_EQUAL(err.msg, "t.csv:2: bad time '\\x1b[31mred\\x1b[0m'");
	ema_error_set(&err, EMA_ERR_INPUT, "--out %s: %s", "a\nb\tc\rd", "x");
	CU_ASSERT_STRING_EQUAL(err.msg, "--out a\\nb\\tc\\rd: x");
	ema_error_set(&err, EMA_ERR_INPUT, "%s", "caf\xc3\xa9 \xe2\x86\x92 \xff \xc2\x9b \x7f");
	CU_ASSERT_STRING_EQUAL(err.msg, "caf\xc3\xa9 \xe2\x86\x92 \\xff \\xc2\\x9b \\x7f");
	/* cut at a whole escape */
	CU_ASSERT_EQUAL(ema_error_escape(buf, 6, "ab\x1b" "cd"), 2);
	CU_ASSERT_STRING_EQUAL(buf, "ab");
	CU_ASSERT_EQUAL(ema_error_escape(buf, sizeof buf, "plain"), 5);
	CU_ASSERT_STRING_EQUAL(buf, "plain");
}

int main(void)
{
	static const struct ema_test_case cases[] = {
		{ "UTF-8, by hand at every edge", test_utf8 },
		{ "the JSON string writer: always JSON, UTF-8 read back", test_writer },
		{ "JSON text checks: NUL, control characters, not UTF-8", test_check_text },
		{ "error messages escaped", test_error_escape },
		{ NULL, NULL }
	};

	return ema_test_run("json_text", cases);
}
