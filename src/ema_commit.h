/* ema_commit.h: the commit the program was built from (tools/version.sh:
 * `git describe --always --dirty`, the tarball's version, or "unknown"),
 * compiled in at build time and rewritten whenever it changes, so that
 * every output can say what made it. */
#ifndef EMA_COMMIT_H
#define EMA_COMMIT_H

extern const char ema_commit[];

#endif
