# SPDX-License-Identifier: MIT
# bash completion for tracer(1). Works with or without the bash-completion package: source it,
# or install it as $PREFIX/share/bash-completion/completions/tracer.
#
# Options are read from `tracer [SUBCOMMAND] --help`, so new options complete without an edit
# here; what an option's value completes to follows its placeholder there (PID: processes with
# their command names, PACK: the packs folder's packs, FILE or F: files, SPEC: probe
# categories) or the choices its synopsis lists ("[--by name|category|thread|stage]").

_tracer_subcommands="record top list packs report diff merge export repair push fleet help"

# The tracer being completed (as typed: tracer, ./tracer, /usr/local/bin/tracer).
_tracer_bin()
{
	local bin=${COMP_WORDS[0]}

	bin=${bin/#\~/$HOME}
	command -v -- "$bin" 2>/dev/null
}

# Prints "OPTION PLACEHOLDER" (placeholder "-" for a flag) for each option of the usage text,
# and "OPTION =a|b|c" for an option whose synopsis lists its choices.
_tracer_options()
{
	local bin sub=$1 line rest
	local re='^ +(-([A-Za-z0-9]), )?(--[a-z0-9-]+)( ([A-Z][A-Z0-9_]*))?'
	local choice='\[(--[a-z0-9-]+) ([a-z0-9]+(\|[a-z0-9]+)+)\]'

	bin=$(_tracer_bin) || return
	while IFS= read -r line; do
		rest=$line
		while [[ $rest =~ $choice ]]; do
			echo "${BASH_REMATCH[1]} =${BASH_REMATCH[2]}"
			rest=${rest#*"${BASH_REMATCH[0]}"}
		done
		[[ $line =~ $re ]] || continue
		[[ ${BASH_REMATCH[2]} ]] && echo "-${BASH_REMATCH[2]} ${BASH_REMATCH[5]:--}"
		echo "${BASH_REMATCH[3]} ${BASH_REMATCH[5]:--}"
	done < <(LC_ALL=C "$bin" $sub --help 2>/dev/null)
}

# The packs folder, found as tracer finds it (userspace/probe_spec.c: probe_pack__dir).
_tracer_packs_dir()
{
	local bin dir

	if [[ $TRACER_PROBES ]]; then
		echo "$TRACER_PROBES"
		return
	fi
	bin=$(_tracer_bin) && bin=$(readlink -f -- "$bin") && dir=${bin%/*}
	if [[ $dir && -d $dir/../probes ]]; then
		echo "$dir/../probes"
	elif [[ $dir && -d $dir/../share/tracer/probes ]]; then
		echo "$dir/../share/tracer/probes"
	else
		echo /usr/local/share/tracer/probes
	fi
}

# Pack names for -P; a word with a slash completes pack files instead.
_tracer_packs()
{
	local cur=$1 dir f

	if [[ $cur == */* || $cur == .* ]]; then
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -f -X '!*.json' -- "$cur") $(compgen -d -- "$cur"))
		return
	fi
	dir=$(_tracer_packs_dir)
	for f in "$dir"/*.json; do
		[[ -e $f ]] || continue
		f=${f##*/}
		f=${f%.json}
		[[ $f == "$cur"* ]] && COMPREPLY+=("$f")
	done
}

# Process ids for -p, matched by pid or by command name ("-p ffm<TAB>"), after the last comma
# of a list. When several match they are shown as "PID (COMM)", and only the pid is inserted.
_tracer_pids()
{
	local cur=$1 head= part d pid stat comm rest ppid
	local -a pids=() shown=()

	if [[ $cur == *,* ]]; then
		head=${cur%,*},
		part=${cur##*,}
	else
		part=$cur
	fi
	for d in /proc/[0-9]*; do
		pid=${d#/proc/}
		read -r stat 2>/dev/null <"$d/stat" || continue
		comm=${stat#*\(}
		comm=${comm%\)*}
		rest=${stat##*\) } # "STATE PPID ..."
		rest=${rest#* }
		ppid=${rest%% *}
		[[ $pid == 2 || $ppid == 2 ]] && continue # kernel threads
		if [[ $pid == "$part"* || ($part && $part != [0-9]* && $comm == "$part"*) ]]; then
			pids+=("$head$pid")
			shown+=("$head$pid ($comm)")
		fi
	done
	if ((${#pids[@]} == 1)); then
		COMPREPLY=("${pids[0]}")
	elif [[ $part == [0-9]* || ! $part ]]; then
		COMPREPLY=("${shown[@]}")
	else
		# matched by name: list them, but leave the typed name in place
		COMPREPLY=("${shown[@]}" "$cur")
	fi
}

# Completes the value of an option whose placeholder is $1.
_tracer_value()
{
	local what=$1 cur=$2

	case $what in
	=*)
		COMPREPLY=($(compgen -W "${what//[=|]/ }" -- "$cur"))
		;;
	PID*)
		_tracer_pids "$cur"
		;;
	PACK*)
		_tracer_packs "$cur"
		;;
	SPEC*)
		compopt -o nospace 2>/dev/null
		COMPREPLY=($(compgen -W "decode: operator: queue: io: other:" -- "$cur"))
		;;
	MB)
		COMPREPLY=($(compgen -W "1 2 4 8 16 32 64 128 256 512 1024" -- "$cur"))
		;;
	F | FILE* | OUT* | TRACE* | DIR*)
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -f -- "$cur"))
		;;
	esac
}

_tracer()
{
	local cur prev sub= i w opt arg found
	local -a opts=()

	COMPREPLY=()
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD - 1]}
	# --opt=VALUE: bash splits at '=' (COMP_WORDBREAKS)
	if [[ $cur == = ]]; then
		prev=${COMP_WORDS[COMP_CWORD - 1]}
		cur=
	elif [[ $prev == = ]] && ((COMP_CWORD >= 2)); then
		prev=${COMP_WORDS[COMP_CWORD - 2]}
	fi
	for w in $_tracer_subcommands; do
		[[ ${COMP_WORDS[1]} == "$w" && COMP_CWORD -gt 1 ]] && sub=$w
	done
	# tracer [options] -- COMMAND [ARGS...]: a command, then its arguments (files)
	for ((i = 1; i < COMP_CWORD; i++)); do
		[[ ${COMP_WORDS[i]} == -- ]] || continue
		if ((i == COMP_CWORD - 1)); then
			COMPREPLY=($(compgen -c -- "$cur"))
		else
			compopt -o filenames 2>/dev/null
			COMPREPLY=($(compgen -f -- "$cur"))
		fi
		return 0
	done

	# each command's own --help lists its options (top's: a recording's, and --sort)
	mapfile -t opts < <(_tracer_options "$sub")
	# the value of an option that takes one (choices first: they are more precise)
	for i in "${opts[@]}" ; do
		opt=${i% *}
		arg=${i#* }
		if [[ $prev == "$opt" && $arg == =* ]]; then
			_tracer_value "$arg" "$cur"
			return 0
		fi
	done
	for i in "${opts[@]}"; do
		opt=${i% *}
		arg=${i#* }
		if [[ $prev == "$opt" && $arg != - ]]; then
			_tracer_value "$arg" "$cur"
			return 0
		fi
	done
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$(printf '%s\n' "${opts[@]%% *}" | sort -u)" -- "$cur"))
		return 0
	fi
	if ((COMP_CWORD == 1)); then
		COMPREPLY=($(compgen -W "$_tracer_subcommands" -- "$cur"))
		return 0
	fi
	case $sub in
	help)
		((COMP_CWORD == 2)) && COMPREPLY=($(compgen -W "$_tracer_subcommands" -- "$cur"))
		;;
	report | diff | merge | export | repair | push)
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -f -X '!*.json' -- "$cur") $(compgen -f -X '!*.gz' -- "$cur")
			$(compgen -d -- "$cur"))
		;;
	list)
		# tracer list BINARY [PATTERN]; with -p, only a pattern
		found=
		for w in "${COMP_WORDS[@]:2:COMP_CWORD-2}"; do
			[[ $w == -p || $w == --pid ]] && found=1
			[[ $w != -* ]] && found=1
		done
		if [[ ! $found ]]; then
			compopt -o filenames 2>/dev/null
			COMPREPLY=($(compgen -f -- "$cur"))
		fi
		;;
	esac
	return 0
}

# tracer as installed, and the ./tracer link make leaves in the source tree
complete -F _tracer tracer ./tracer
