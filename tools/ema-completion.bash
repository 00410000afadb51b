# ema-completion.bash: bash completion of ema: its commands, each
# command's options (the lists of `ema help CMD`; tests/test_cli.sh checks
# that they agree), the words of `ema list` and `ema config`, policy,
# hardware and model names from `ema list` after --set policies=,
# hardware= and model=, files for --config, --trace and --csv, folders for
# --out. `make install` puts it in $(datadir)/bash-completion/completions/ema;
# or `source tools/ema-completion.bash`. Standalone: it needs bash 4, not
# the bash-completion package.
# shellcheck shell=bash

_ema_commands="run config list sweep figures paths bench calibrate validate version help"

# _ema_options CMD: the options CMD takes.
_ema_options()
{
	case $1 in
	run) echo "--config -c --set -s --seed --out -o --backend --hw --verify --no-plots --quiet -q --help -h" ;;
	config) echo "--config -c --set -s --seed --help -h" ;;
	list) echo "--help -h" ;;
	sweep) echo "--vary --config -c --set -s --seed --out -o --jobs -j --shard --sbatch --tasks --throttle --partition --account --time --mem --sbatch-arg --dry-run --max-rate --slo --resolution --no-plots --point-plots --quiet -q --help -h" ;;
	figures) echo "--out -o --quiet -q --help -h" ;;
	paths) echo "--config -c --set -s --out -o --help -h" ;;
	bench) echo "--quick --runs --memory --trace --backend --hw --csv --help -h" ;;
	calibrate) echo "--out -o --csv --name --quick --help -h" ;;
	validate) echo "--config -c --set -s --seed --csv --quiet -q --help -h" ;;
	version) echo "--help -h" ;;
	help) echo "--man --help -h" ;;
	esac
}

# _ema_names EMA WHAT: the first word of each line of `ema list WHAT`.
_ema_names()
{
	"$1" list "$2" 2>/dev/null | while read -r name _; do printf '%s\n' "$name"; done
}

# _ema_reply WORD...: the words that start with $cur, as replacements of
# the word bash completes: bash splits a word at '=' and ':'
# (COMP_WORDBREAKS), so it replaces only the part after the last one, and
# $_ema_keep is what comes before it.
_ema_reply()
{
	local w c
	COMPREPLY=()
	for w in "$@"; do
		[[ $w == "$cur"* ]] || continue
		c=$_ema_pfx$w
		COMPREPLY+=("${c#"$_ema_keep"}")
	done
}

# _ema_reply_lines: the same for the lines of stdin (compgen's output).
_ema_reply_lines()
{
	local -a list=()
	mapfile -t list
	_ema_reply "${list[@]}"
}

# --set and --vary: KEY=VALUE. Names after policies= (a comma list),
# hardware= and model=; otherwise the top-level keys.
_ema_key_value()
{
	local ema=$1 key value head n
	local -a list=()
	if [[ $cur != *=* ]]; then
		compopt -o nospace 2>/dev/null
		_ema_reply name= seed= hardware= model= page_mib= gpu_mem_cap_gib= horizon_s= \
			policies= serving. policy. tenants.
		return
	fi
	key=${cur%%=*}
	value=${cur#*=}
	case $key in
	policies)
		# the names already given stay; the last one is completed
		head=${value%"${value##*,}"}
		for n in $(_ema_names "$ema" policies); do list+=("$key=$head$n"); done
		_ema_reply "${list[@]}"
		;;
	hardware)
		for n in $(_ema_names "$ema" hardware); do list+=("$key=$n"); done
		_ema_reply "${list[@]}"
		;;
	model)
		for n in $(_ema_names "$ema" models); do list+=("$key=$n"); done
		_ema_reply "${list[@]}"
		;;
	*) COMPREPLY=() ;;
	esac
}

_ema()
{
	local cur prev cmd ema i w glue=0 _ema_keep _ema_pfx=
	local -a words=()
	# rejoin what bash split at '=' and ':' (--set policies=static,ema)
	for ((i = 0; i <= COMP_CWORD && i < ${#COMP_WORDS[@]}; i++)); do
		w=${COMP_WORDS[i]}
		if ((i > 1)) && [[ $w =~ ^[=:]+$ ]]; then
			words[${#words[@]} - 1]+=$w
			glue=1
		elif ((glue)); then
			words[${#words[@]} - 1]+=$w
			glue=0
		else
			words+=("$w")
		fi
	done
	((COMP_CWORD >= ${#COMP_WORDS[@]})) && words+=("")
	cur=${words[${#words[@]} - 1]}
	prev=
	((${#words[@]} > 1)) && prev=${words[${#words[@]} - 2]}
	w=${COMP_WORDS[COMP_CWORD]-}
	_ema_keep=${cur%"$w"}
	# --out=DIR as one word: the value after the option
	if [[ $cur == --*=* ]]; then
		prev=${cur%%=*}
		_ema_pfx=$prev=
		cur=${cur#*=}
	fi
	ema=${COMP_WORDS[0]}
	if ((COMP_CWORD == 1)); then
		# shellcheck disable=SC2086
		_ema_reply $_ema_commands --help --version
		return
	fi
	cmd=${COMP_WORDS[1]}
	case $prev in
	-c | --config | --trace | --csv | --sbatch)
		compopt -o filenames 2>/dev/null
		_ema_reply_lines < <(compgen -f -- "$cur")
		return
		;;
	-o | --out)
		compopt -o filenames 2>/dev/null
		if [[ $cmd == calibrate ]]; then
			_ema_reply_lines < <(compgen -f -- "$cur")
		else
			_ema_reply_lines < <(compgen -d -- "$cur")
		fi
		return
		;;
	--backend)
		# the names of the backend table (src/backends.c)
		_ema_reply $(_ema_names "$ema" backends)
		return
		;;
	-s | --set | --vary)
		_ema_key_value "$ema"
		return
		;;
	--seed | --name | -j | --jobs | --shard | --tasks | --throttle | --max-rate | --slo | --resolution | \
		--partition | --account | --time | --mem | --sbatch-arg)
		COMPREPLY=()
		return
		;;
	esac
	if [[ $cur == -* ]]; then
		# shellcheck disable=SC2046
		_ema_reply $(_ema_options "$cmd")
		return
	fi
	# shellcheck disable=SC2086
	case $cmd in
	list) _ema_reply policies models hardware backends figures ;;
	config) _ema_reply default ;;
	figures)
		compopt -o filenames 2>/dev/null
		_ema_reply_lines < <(compgen -d -- "$cur")
		;;
	paths)
		# the decision log: a file
		compopt -o filenames 2>/dev/null
		_ema_reply_lines < <(compgen -f -- "$cur")
		;;
	sweep)
		# ema sweep merge DIR, ema sweep status DIR
		if [[ $prev == merge || $prev == status ]]; then
			compopt -o filenames 2>/dev/null
			_ema_reply_lines < <(compgen -d -- "$cur")
		else
			_ema_reply merge status
		fi
		;;
	help) _ema_reply $_ema_commands ;;
	*) COMPREPLY=() ;;
	esac
}

complete -F _ema ema
