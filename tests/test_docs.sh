#!/bin/sh
# test_docs.sh: the documentation as a reader follows it: every page of
# doc/ and results/ links back to the README, every relative link (and
# the heading it points to) exists inside the repository, the README's
# folder map lists exactly the repository's folders, and the default
# scenario quoted in doc/configuration.md is scenarios/default.json.
# Needs a git checkout (the tracked files say what the folders are):
# skips (77) elsewhere, such as `make distcheck`. Exit 0 pass, 1 fail, 77
# skip.
# doc/keys.md itself is checked against the key tables by tests/test_keys.

SRC=${EMA_SRCDIR:-$(dirname "$0")/..}
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

# The default scenario as doc/configuration.md quotes it.
awk '/^```json/ { f = 1; next } /^```/ { if (f) exit } f' doc/configuration.md > "$T_JSON"
cmp -s "$T_JSON" scenarios/default.json ||
	bad "doc/configuration.md: the quoted default scenario differs from scenarios/default.json"

[ -s "$T_FAIL" ] && fail=1
[ $fail -eq 0 ] && echo "test_docs.sh: $(echo "$pages" | wc -l) pages checked"
exit $fail
