#!/bin/bash

__policy_cursor_index_in_current_word() {
    local remaining="${COMP_LINE}"

    local word
    for word in "${COMP_WORDS[@]::COMP_CWORD}"; do
        remaining="${remaining##*([[:space:]])"${word}"*([[:space:]])}"
    done

    local -ir index="$((COMP_POINT - ${#COMP_LINE} + ${#remaining}))"
    if [[ "${index}" -le 0 ]]; then
        printf 0
    else
        printf %s "${index}"
    fi
}

# positional arguments:
#
# - 1: the current (sub)command's count of positional arguments
#
# required variables:
#
# - repeating_flags: the repeating flags that the current (sub)command can accept
# - non_repeating_flags: the non-repeating flags that the current (sub)command can accept
# - repeating_options: the repeating options that the current (sub)command can accept
# - non_repeating_options: the non-repeating options that the current (sub)command can accept
# - positional_number: value ignored
# - unparsed_words: unparsed words from the current command line
#
# modified variables:
#
# - non_repeating_flags: remove flags for this (sub)command that are already on the command line
# - non_repeating_options: remove options for this (sub)command that are already on the command line
# - positional_number: set to the current positional number
# - unparsed_words: remove all flags, options, and option values for this (sub)command
__policy_offer_flags_options() {
    local -ir positional_count="${1}"
    positional_number=0

    local was_flag_option_terminator_seen=false
    local is_parsing_option_value=false

    local -ar unparsed_word_indices=("${!unparsed_words[@]}")
    local -i word_index
    for word_index in "${unparsed_word_indices[@]}"; do
        if "${is_parsing_option_value}"; then
            # This word is an option value:
            # Reset marker for next word iff not currently the last word
            [[ "${word_index}" -ne "${unparsed_word_indices[${#unparsed_word_indices[@]} - 1]}" ]] && is_parsing_option_value=false
            unset "unparsed_words[${word_index}]"
            # Do not process this word as a flag or an option
            continue
        fi

        local word="${unparsed_words["${word_index}"]}"
        if ! "${was_flag_option_terminator_seen}"; then
            case "${word}" in
            --)
                unset "unparsed_words[${word_index}]"
                # by itself -- is a flag/option terminator, but if it is the last word, it is the start of a completion
                if [[ "${word_index}" -ne "${unparsed_word_indices[${#unparsed_word_indices[@]} - 1]}" ]]; then
                    was_flag_option_terminator_seen=true
                fi
                continue
                ;;
            -*)
                # ${word} is a flag or an option
                # If ${word} is an option, mark that the next word to be parsed is an option value
                local option
                for option in "${repeating_options[@]}" "${non_repeating_options[@]}"; do
                    [[ "${word}" = "${option}" ]] && is_parsing_option_value=true && break
                done

                # Remove ${word} from ${non_repeating_flags} or ${non_repeating_options} so it isn't offered again
                local not_found=true
                local -i index
                for index in "${!non_repeating_flags[@]}"; do
                    if [[ "${non_repeating_flags[${index}]}" = "${word}" ]]; then
                        unset "non_repeating_flags[${index}]"
                        non_repeating_flags=("${non_repeating_flags[@]}")
                        not_found=false
                        break
                    fi
                done
                if "${not_found}"; then
                    for index in "${!non_repeating_flags[@]}"; do
                        if [[ "${non_repeating_flags[${index}]}" = "${word}" ]]; then
                            unset "non_repeating_flags[${index}]"
                            non_repeating_flags=("${non_repeating_flags[@]}")
                            break
                        fi
                    done
                fi
                unset "unparsed_words[${word_index}]"
                continue
                ;;
            esac
        fi

        # ${word} is neither a flag, nor an option, nor an option value
        if [[ "${positional_number}" -lt "${positional_count}" || "${positional_count}" -lt 0 ]]; then
            # ${word} is a positional
            ((positional_number++))
            unset "unparsed_words[${word_index}]"
        else
            if [[ -z "${word}" ]]; then
                # Could be completing a flag, option, or subcommand
                positional_number=-1
            else
                # ${word} is a subcommand or invalid, so stop processing this (sub)command
                positional_number=-2
            fi
            break
        fi
    done

    unparsed_words=("${unparsed_words[@]}")

    if\
        ! "${was_flag_option_terminator_seen}"\
        && ! "${is_parsing_option_value}"\
        && [[ ("${cur}" = -* && "${positional_number}" -ge 0) || "${positional_number}" -eq -1 ]]
    then
        COMPREPLY+=($(compgen -W "${repeating_flags[*]} ${non_repeating_flags[*]} ${repeating_options[*]} ${non_repeating_options[*]}" -- "${cur}"))
    fi
}

__policy_add_completions() {
    local completion
    while IFS='' read -r completion; do
        COMPREPLY+=("${completion}")
    done < <(IFS=$'\n' compgen "${@}" -- "${cur}")
}

__policy_custom_complete() {
    if [[ -n "${cur}" || -z ${COMP_WORDS[${COMP_CWORD}]} || "${COMP_LINE:${COMP_POINT}:1}" != ' ' ]]; then
        local -ar words=("${COMP_WORDS[@]}")
    else
        local -ar words=("${COMP_WORDS[@]::${COMP_CWORD}}" '' "${COMP_WORDS[@]:${COMP_CWORD}}")
    fi

    "${COMP_WORDS[0]}" "${@}" "${words[@]}"
}

_policy() {
    local state
    state="$(shopt -p;shopt -po)"
    trap "${state//$'\n'/;}" RETURN
    shopt -s extglob
    set +o history +o posix

    local -xr SAP_SHELL=bash
    local -x SAP_SHELL_VERSION
    SAP_SHELL_VERSION="$(IFS='.';printf %s "${BASH_VERSINFO[*]}")"
    local -r SAP_SHELL_VERSION

    local -r cur="${2}"
    local -r prev="${3}"

    local -i positional_number
    local -a unparsed_words=("${COMP_WORDS[@]:1:${COMP_CWORD}}")

    local -a repeating_flags=()
    local -a non_repeating_flags=(--version -h --help)
    local -a repeating_options=()
    local -a non_repeating_options=()
    __policy_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    check|decide|explain|plan|diff|matrix|serve|schema|version|keygen|bundle|replay|log|help)
        # Offer subcommand argument completions
        "_policy_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'check decide explain plan diff matrix serve schema version keygen bundle replay log help' -- "${cur}"))
        ;;
    esac
}

_policy_check() {
    repeating_flags=()
    non_repeating_flags=(--strict --coverage --version -h --help)
    repeating_options=()
    non_repeating_options=(--format --min-coverage --junit-output --public-key)
    __policy_offer_flags_options -1

    # Offer option value completions
    case "${prev}" in
    '--format')
        __policy_add_completions -W 'text'$'\n''json'$'\n''github'$'\n''junit'$'\n''markdown'
        return
        ;;
    '--min-coverage')
        return
        ;;
    '--junit-output')
        return
        ;;
    '--public-key')
        return
        ;;
    esac
}

_policy_decide() {
    repeating_flags=()
    non_repeating_flags=(--jsonl --version -h --help)
    repeating_options=()
    non_repeating_options=(--policies --request)
    __policy_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--policies')
        return
        ;;
    '--request')
        return
        ;;
    esac
}

_policy_explain() {
    repeating_flags=()
    non_repeating_flags=(--signed-out --expired --version -h --help)
    repeating_options=(--app-role --subject-attribute --usage --resource-attribute --context-attribute)
    non_repeating_options=(--policies --request --format --subject-id --subject-tier --subscription-expiry --auth-method --verified-ago --verified-at --action --resource-type --resource-id --owner --member-role --now)
    __policy_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--policies')
        return
        ;;
    '--request')
        return
        ;;
    '--format')
        __policy_add_completions -W 'text'$'\n''json'
        return
        ;;
    '--subject-id')
        return
        ;;
    '--subject-tier')
        return
        ;;
    '--subscription-expiry')
        return
        ;;
    '--app-role')
        return
        ;;
    '--auth-method')
        return
        ;;
    '--verified-ago')
        return
        ;;
    '--verified-at')
        return
        ;;
    '--subject-attribute')
        return
        ;;
    '--action')
        return
        ;;
    '--resource-type')
        return
        ;;
    '--resource-id')
        return
        ;;
    '--owner')
        return
        ;;
    '--member-role')
        return
        ;;
    '--usage')
        return
        ;;
    '--resource-attribute')
        return
        ;;
    '--context-attribute')
        return
        ;;
    '--now')
        return
        ;;
    esac
}

_policy_plan() {
    repeating_flags=()
    non_repeating_flags=(--signed-out --expired --version -h --help)
    repeating_options=(--app-role --subject-attribute --usage --resource-attribute --context-attribute)
    non_repeating_options=(--policies --format --subject-id --subject-tier --subscription-expiry --auth-method --verified-ago --verified-at --action --resource-type --resource-id --owner --member-role --now)
    __policy_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--policies')
        return
        ;;
    '--format')
        __policy_add_completions -W 'text'$'\n''json'
        return
        ;;
    '--subject-id')
        return
        ;;
    '--subject-tier')
        return
        ;;
    '--subscription-expiry')
        return
        ;;
    '--app-role')
        return
        ;;
    '--auth-method')
        return
        ;;
    '--verified-ago')
        return
        ;;
    '--verified-at')
        return
        ;;
    '--subject-attribute')
        return
        ;;
    '--action')
        return
        ;;
    '--resource-type')
        return
        ;;
    '--resource-id')
        return
        ;;
    '--owner')
        return
        ;;
    '--member-role')
        return
        ;;
    '--usage')
        return
        ;;
    '--resource-attribute')
        return
        ;;
    '--context-attribute')
        return
        ;;
    '--now')
        return
        ;;
    esac
}

_policy_diff() {
    repeating_flags=()
    non_repeating_flags=(--fail-on-widening --version -h --help)
    repeating_options=()
    non_repeating_options=(--base --format)
    __policy_offer_flags_options -1

    # Offer option value completions
    case "${prev}" in
    '--base')
        return
        ;;
    '--format')
        __policy_add_completions -W 'text'$'\n''json'$'\n''github'$'\n''markdown'
        return
        ;;
    esac
}

_policy_matrix() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--resource --format --public-key)
    __policy_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--resource')
        return
        ;;
    '--format')
        __policy_add_completions -W 'text'$'\n''markdown'$'\n''html'$'\n''json'
        return
        ;;
    '--public-key')
        return
        ;;
    esac
}

_policy_serve() {
    repeating_flags=()
    non_repeating_flags=(--strict-reload --decision-log-signed-out --trust-caller-subjects --console --version -h --help)
    repeating_options=(--apple-client-id --trusted-proxy --app-store-bundle-id --app-store-environment --app-store-root-certificate)
    non_repeating_options=(--policies --database --host --port --apple-jwks --operator-token-file --bundle-key --body-limit --sign-in-limit --read-timeout --request-timeout --decision-log --decision-log-limit --write-limit --source-write-limit --maintenance-interval --retention --ipv6-prefix --max-connections --max-connections-per-client --notification-limit --access-token-lifetime --refresh-grace-period --decision-cache-entries --shadow)
    __policy_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--policies')
        return
        ;;
    '--database')
        return
        ;;
    '--host')
        return
        ;;
    '--port')
        return
        ;;
    '--apple-client-id')
        return
        ;;
    '--apple-jwks')
        return
        ;;
    '--operator-token-file')
        return
        ;;
    '--bundle-key')
        return
        ;;
    '--body-limit')
        return
        ;;
    '--sign-in-limit')
        return
        ;;
    '--trusted-proxy')
        return
        ;;
    '--read-timeout')
        return
        ;;
    '--request-timeout')
        return
        ;;
    '--decision-log')
        return
        ;;
    '--decision-log-limit')
        return
        ;;
    '--app-store-bundle-id')
        return
        ;;
    '--app-store-environment')
        return
        ;;
    '--app-store-root-certificate')
        return
        ;;
    '--write-limit')
        return
        ;;
    '--source-write-limit')
        return
        ;;
    '--maintenance-interval')
        return
        ;;
    '--retention')
        return
        ;;
    '--ipv6-prefix')
        return
        ;;
    '--max-connections')
        return
        ;;
    '--max-connections-per-client')
        return
        ;;
    '--notification-limit')
        return
        ;;
    '--access-token-lifetime')
        return
        ;;
    '--refresh-grace-period')
        return
        ;;
    '--decision-cache-entries')
        return
        ;;
    '--shadow')
        return
        ;;
    esac
}

_policy_schema() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __policy_offer_flags_options 0
}

_policy_version() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--format)
    __policy_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--format')
        __policy_add_completions -W 'text'$'\n''json'
        return
        ;;
    esac
}

_policy_keygen() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--out)
    __policy_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--out')
        return
        ;;
    esac
}

_policy_bundle() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __policy_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    build|verify|inspect)
        # Offer subcommand argument completions
        "_policy_bundle_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'build verify inspect' -- "${cur}"))
        ;;
    esac
}

_policy_bundle_build() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--key -o --revision --created)
    __policy_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--key')
        return
        ;;
    '-o')
        return
        ;;
    '--revision')
        return
        ;;
    '--created')
        return
        ;;
    esac
}

_policy_bundle_verify() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--public-key --held-revision)
    __policy_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--public-key')
        return
        ;;
    '--held-revision')
        return
        ;;
    esac
}

_policy_bundle_inspect() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--format)
    __policy_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--format')
        __policy_add_completions -W 'text'$'\n''json'
        return
        ;;
    esac
}

_policy_replay() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--policies --base --format --fail-on)
    __policy_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--policies')
        return
        ;;
    '--base')
        return
        ;;
    '--format')
        __policy_add_completions -W 'text'$'\n''json'$'\n''github'$'\n''markdown'
        return
        ;;
    '--fail-on')
        __policy_add_completions -W 'allow-to-deny'$'\n''any'
        return
        ;;
    esac
}

_policy_log() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __policy_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    pull)
        # Offer subcommand argument completions
        "_policy_log_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'pull' -- "${cur}"))
        ;;
    esac
}

_policy_log_pull() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--server --operator-token-file --output -o --from --to --user --action --resource-type --decision --reason --max)
    __policy_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--server')
        return
        ;;
    '--operator-token-file')
        return
        ;;
    '--output'|'-o')
        return
        ;;
    '--from')
        return
        ;;
    '--to')
        return
        ;;
    '--user')
        return
        ;;
    '--action')
        return
        ;;
    '--resource-type')
        return
        ;;
    '--decision')
        return
        ;;
    '--reason')
        return
        ;;
    '--max')
        return
        ;;
    esac
}

_policy_help() {
    repeating_flags=()
    non_repeating_flags=(--version)
    repeating_options=()
    non_repeating_options=()
    __policy_offer_flags_options -1
}

complete -o filenames -F _policy policy
