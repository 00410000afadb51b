#!/bin/sh
# test_docs.sh: the documentation as a reader follows it: every page of
# doc/ and results/ links back to the README, every relative link (and
# the heading it points to) exists inside the repository, the README's
# folder map lists exactly the repository's folders, the default scenario
# quoted in doc/configuration.md is scenarios/default.json, every policy
# is where doc/policies.md says adding one takes it, doc/cli.md names
# every command of ./ema (or $EMA) when there is one, README is
# README.md, and the README's results are those of
# results/published/README.md. Needs a git checkout (the tracked files
# say what the folders are): skips (77) elsewhere, such as `make
# distcheck`. Exit 0 pass, 1 fail, 77 skip.
# doc/keys.md itself is checked against the key tables by tests/test_keys.

SRC=${EMA_SRCDIR:-$(dirname "$0")/..}
# the program, for the claims about its commands (from the build folder,
# before the cd; those checks are left out without it)
EMA=${EMA:-./ema}
if [ -x "$EMA" ]; then
	EMA=$(cd "$(dirname "$EMA")" && pwd)/$(basename "$EMA")
else
	EMA=
fi
cd "$SRC" || exit 99
# the source folder must be the top of a work tree, not a tarball
# unpacked inside one (make distcheck)
if ! command -v git >/dev/null 2>&1 ||
   [ "$(git rev-parse --show-toplevel 2>/dev/null)" != "$(pwd -P)" ]; then
	echo "test_docs.sh: not a git checkout, skipped"
	exit 77
fi

top=$(pwd -P)
T=$(mktemp -d "${TMPDIR:-/tmp}/ema-docs.XXXXXX") || exit 99
trap 'rm -rf "$T"' EXIT
trap 'exit 1' HUP INT TERM
T_FAIL=$T/fail
T_JSON=$T/json
: > "$T_FAIL"
fail=0
bad() {
	echo "FAIL: $*"
	fail=1
}

# Tracked and new (not ignored) markdown pages: what a reader of the
# repository sees.
pages=$(git ls-files --cached --others --exclude-standard -- '*.md' | sort)

# GitHub's anchor of a heading: lower case, punctuation but '-' and '_'
# dropped, spaces turned into '-'.
anchors() {
	sed -n 's/^#\{1,6\} \(.*\)$/\1/p' "$1" |
		tr 'A-Z' 'a-z' | sed -e 's/[^a-z0-9 _-]//g' -e 's/ /-/g'
}

for p in $pages; do
	dir=$(dirname "$p")
	case $p in
	doc/*|results/*)
		# the way back to the front page
		up=$(echo "$dir" | sed -e 's|[^/][^/]*|..|g')
		grep -q "]($up/README.md)" "$p" || bad "$p: no link back to $up/README.md"
		;;
	esac
	# every [text](target) that is not a URL
	grep -o '\]([^)]*)' "$p" | sed -e 's/^](//' -e 's/)$//' | while read -r target; do
		case $target in
		http://*|https://*|mailto:*) continue ;;
		esac
		file=${target%%#*}
		anchor=
		case $target in
		*#*) anchor=${target#*#} ;;
		esac
		if [ -n "$file" ]; then
			path=$dir/$file
		else
			path=$p
		fi
		# inside the repository: a link to what lies beside it
		# (../shared) is broken for whoever clones it, and would make
		# this test pass or fail by what is there
		linkdir=$(cd "$(dirname "$path")" 2>/dev/null && pwd -P)
		case $linkdir/ in
		/|"$top"/*) ;;
		*)
			echo "FAIL: $p: link to $target: outside the repository"
			echo x >> "$T_FAIL"
			continue
			;;
		esac
		if [ ! -e "$path" ]; then
			echo "FAIL: $p: link to $target: no $path"
			echo x >> "$T_FAIL"
			continue
		fi
		if [ -n "$anchor" ] && [ -f "$path" ] && ! anchors "$path" | grep -qx -- "$anchor"; then
			echo "FAIL: $p: link to $target: no heading #$anchor in $path"
			echo x >> "$T_FAIL"
		fi
	done
done

# The folder map: the rows of README.md's table between "## Folder map"
# and the next heading, against the folders that hold tracked files.
map=$(sed -n '/^## Folder map/,/^## /p' README.md | sed -n 's/^| `\([^`/]*\)\/` |.*/\1/p' | sort)
real=$(git ls-files --cached --others --exclude-standard | sed -n 's|^\([^/]*\)/.*|\1|p' | sort -u)
if [ "$map" != "$real" ]; then
	bad "README.md folder map lists: $(echo $map); the repository has: $(echo $real)"
fi

# Adding a policy (doc/policies.md, "Writing a policy"): every policy that
# policies/ defines is declared and listed in policies/policy_table.c,
# built by policies/local.mk and described in doc/policies.md's table.
for f in policies/*.c; do
	sym=$(sed -n 's/^const struct ema_policy_ops \(ema_policy_[a-z0-9_]*\) = {$/\1/p' "$f")
	[ -n "$sym" ] || continue
	name=$(sed -n "/^const struct ema_policy_ops $sym = {\$/,/^};/s/^[[:space:]]*\.name = \"\([^\"]*\)\",\$/\1/p" "$f")
	grep -q "^extern const struct ema_policy_ops $sym;\$" policies/policy_table.c ||
		bad "$f: $sym is not declared in policies/policy_table.c"
	grep -q "^[[:space:]]*&$sym,\$" policies/policy_table.c ||
		bad "$f: $sym is not in policies/policy_table.c's table"
	grep -q "$f" policies/local.mk || bad "$f: not in policies/local.mk"
	if [ -z "$name" ] || ! grep -q "^| \`$name\` |" doc/policies.md; then
		bad "$f: policy '$name' has no row in doc/policies.md's table"
	fi
done

# README is the README.md that GitHub shows (a link to it, or its copy),
# so that the two front pages never say different things.
if [ -L README ]; then
	[ "$(readlink README)" = README.md ] || bad "README links to $(readlink README), not README.md"
else
	cmp -s README README.md || bad "README and README.md differ"
fi

# The README's results in brief are results/published/README.md's figures
# as they are: per scenario and overloaded tenant, the means of ema /
# static, pooled / static and ema / pooled on the steady state, and the
# worst lender's name and figure.
awk -F'|' '/^\| [a-z0-9_]+ \| hot/ {
	id = $2; t = $3; st = $4; pool = $5; po = $6; w = $11
	gsub(/ /, "", id); gsub(/ /, "", t)
	split(st, a, " "); split(pool, b, " "); gsub(/\*/, "", po); split(po, c, " ")
	sub(/^[^:]*: /, "", w); split(w, f, " ")
	fig = f[3]; sub(/;$/, "", fig)
	printf "%s %s %s %s %s %s %s\n", id, t, a[1], b[1], c[1], f[1], fig
}' results/published/README.md > "$T/published"
[ -s "$T/published" ] || bad "results/published/README.md: no row of an overloaded tenant found"
while read -r id t st pool po lender fig; do
	rows=$(sed -n '/^## Results in brief/,$p' README.md | grep "^| \`$id\`" |
		grep -e ", $t |" || true)
	row=$(echo "$rows" | head -1)
	if [ -z "$row" ]; then
		bad "README.md: Results in brief has no row for $id $t"
		continue
	fi
	echo "$row" | awk -F'|' -v a="$st" -v b="$pool" -v c="$po" '{ gsub(/[ *]/, "", $3); gsub(/[ *]/, "", $4); gsub(/[ *]/, "", $5)
		exit !($3 == a && $4 == b && $5 == c) }' ||
		bad "README.md: $id $t reads $(echo "$row" | cut -d'|' -f3,4,5), results/published has $st | $pool | $po"
	case $row in
	*"$lender "*"$fig"*) ;;
	*) bad "README.md: $id $t: the worst lender is $lender at $fig in results/published" ;;
	esac
done < "$T/published"

# doc/cli.md names every command the program has: a row of its table of
# commands and a line of its synopsis.
if [ -n "$EMA" ]; then
	for c in $("$EMA" help | sed -n '/^commands:/,/^$/s/^  \([a-z]*\) .*/\1/p'); do
		grep -q "^| \`$c\` |" doc/cli.md || bad "doc/cli.md: no row for the command $c"
		grep -q "^ema $c\( \|\$\)" doc/cli.md || bad "doc/cli.md: no synopsis of ema $c"
	done
fi

# The default scenario as doc/configuration.md quotes it.
awk '/^```json/ { f = 1; next } /^```/ { if (f) exit } f' doc/configuration.md > "$T_JSON"
cmp -s "$T_JSON" scenarios/default.json ||
	bad "doc/configuration.md: the quoted default scenario differs from scenarios/default.json"

[ -s "$T_FAIL" ] && fail=1
[ $fail -eq 0 ] && echo "test_docs.sh: $(echo "$pages" | wc -l) pages checked"
exit $fail
