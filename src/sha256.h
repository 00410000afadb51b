/* sha256.h: SHA-256 (FIPS 180-4), for the hash a sweep keeps of each
 * point's effective configuration: a point folder says which
 * configuration made it, so that a resumed sweep never mixes points of
 * two configurations. The hex form is what `sha256sum` prints, so a user
 * can check a point with `sha256sum -c config.sha256`. */
#ifndef EMA_SHA256_H
#define EMA_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct ema_sha256 {
	uint32_t h[8];
	uint64_t bytes;     /* message length so far */
	unsigned char buf[64];
	size_t used;        /* bytes waiting in buf */
};

#define EMA_SHA256_HEX 65 /* 64 hex digits and the terminator */

void ema_sha256_init(struct ema_sha256 *s);
void ema_sha256_update(struct ema_sha256 *s, const void *data, size_t len);
/* Finishes the hash and writes it as 64 lower-case hex digits. */
void ema_sha256_hex(struct ema_sha256 *s, char hex[EMA_SHA256_HEX]);
/* The hash of one buffer, in hex. */
void ema_sha256_of(const void *data, size_t len, char hex[EMA_SHA256_HEX]);

#endif
