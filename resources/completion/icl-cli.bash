# bash completion for icl-cli. Subcommands and options are read from icl-cli's own --help (CLI11), so the
# completion always matches the installed program; presets from `icl-cli presets`.
# Installed as /usr/share/bash-completion/completions/icl-cli; from the tree: source resources/completion/icl-cli.bash

# Words of a CLI11 help section: the first column of the lines after the heading (e.g. "SUBCOMMANDS:").
_icl_cli_help_section()
{
    "$1" "${@:3}" --help 2>/dev/null | awk -v want="$2" '
        toupper($0) ~ "^" want ":" {on = 1; next}
        on && /^[^ ]/ {on = 0}
        on && NF {print $1}'
}

_icl_cli_options()
{
    "$1" "${@:2}" --help 2>/dev/null | grep -oE -- '(^|[ ,])--?[A-Za-z][A-Za-z0-9-]*' | tr -d ' ,' | sort -u
}

_icl_cli()
{
    local cur prev words cword
    _init_completion || return
    local cli=${words[0]} sub="" i
    for ((i = 1; i < cword; i++)); do
        if [[ ${words[i]} != -* ]]; then
            sub=${words[i]}
            break
        fi
    done
    if [[ -z $sub ]]; then
        COMPREPLY=($(compgen -W "$(_icl_cli_help_section "$cli" SUBCOMMANDS) --help --version" -- "$cur"))
        return
    fi
    case $prev in
    --preset)
        COMPREPLY=($(compgen -W "$("$cli" presets 2>/dev/null | awk '/^[^ ]/ {print $1}')" -- "$cur"))
        return ;;
    --scale) COMPREPLY=($(compgen -W "quick paper" -- "$cur")); return ;;
    --format) COMPREPLY=($(compgen -W "png svg pdf csv" -- "$cur")); return ;;
    --layout) COMPREPLY=($(compgen -W "workbench garg" -- "$cur")); return ;;
    --device) COMPREPLY=($(compgen -W "auto cpu cuda" -- "$cur")); return ;;
    --reference) COMPREPLY=($(compgen -W "gd gdpp" -- "$cur")); return ;;
    --corruption) COMPREPLY=($(compgen -W "change_label different_w shuffle_pairs" -- "$cur")); return ;;
    --config | --prompt | --out | --emit-slurm) _filedir; return ;;
    --set | --steps | --seed | --threads | --checkpoint | --prompts | --dpi | --plot | --layer | --head | --k | \
        --m | --seeds | --lr | --batch-size | --w-scale | --cut-layer | --points | --eta-max | --alpha | --jobs)
        return ;;
    esac
    # analyze RUN.h5 KIND [options]: the second positional is the analysis, which has its own options.
    local kind=""
    if [[ $sub == analyze ]]; then
        local positional=0
        for ((i = 2; i < cword; i++)); do
            if [[ ${words[i]} != -* && ${words[i - 1]} != --* ]]; then
                ((positional++))
                ((positional == 2)) && kind=${words[i]}
            fi
        done
        if ((positional == 1)) && [[ $cur != -* ]]; then
            COMPREPLY=($(compgen -W "$(_icl_cli_help_section "$cli" ANALYSES analyze)" -- "$cur"))
            return
        fi
    fi
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(_icl_cli_options "$cli" "$sub" $kind)" -- "$cur"))
        return
    fi
    case $sub in
    sweep) _filedir json ;;
    aggregate) _filedir -d ;;
    import) _filedir ;;
    *) _filedir '@(h5|hdf5)' ;;
    esac
}
complete -F _icl_cli icl-cli
