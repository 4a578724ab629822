# shellcheck shell=bash
# Named steps with a timing table: `step NAME` starts a step (ending the one before); the table of every
# step's wall time is printed when the script exits, successful or not, with the step that failed marked.
_steps_started=$SECONDS
_step_names=()
_step_secs=()
_step_begin=$SECONDS
_step_failed=""

step() {
    _step_end
    _step_names+=("$*")
    _step_begin=$SECONDS
    printf '\n==== %s ====\n' "$*"
}

_step_end() {
    if [ "${#_step_names[@]}" -gt "${#_step_secs[@]}" ]; then
        _step_secs+=("$((SECONDS - _step_begin))")
    fi
}

step_failed() { _step_failed="$*"; }

_steps_table() {
    local rc=$? i
    _step_end
    printf '\n%-40s %8s\n' "step" "seconds"
    for i in "${!_step_names[@]}"; do
        printf '%-40s %8d\n' "${_step_names[$i]}" "${_step_secs[$i]}"
    done
    printf '%-40s %8d\n' "total" "$((SECONDS - _steps_started))"
    if [ "$rc" != 0 ]; then
        printf '\nFAILED in step "%s" (exit %d)%s\n' "${_step_names[-1]:-?}" "$rc" \
            "${_step_failed:+: $_step_failed}"
    fi
}
trap _steps_table EXIT

steps_done() { printf '\nall checks passed\n'; }
