#!/usr/bin/env zsh
# complete.zsh DIR WORD...: the matches zsh's completion system offers for the command line WORD... (the last
# word is the one completed), one per line, from the completion functions in DIR (tilec's _tilec): an
# interactive zsh in a pseudo-terminal (zsh/zpty) loads compinit, types the line and a Tab; a compadd wrapper
# prints every match it is given before adding it. cli_completion.test.
# The line is typed only once zle shows its prompt: typed earlier, while the terminal is still in canonical
# mode (a loaded machine), the \C-u that follows is the terminal's own line kill and erases it unseen.
zmodload zsh/zpty || exit 2
dir=$1
shift
zpty tilec_z zsh -f -i
zpty -w tilec_z "PS1='Z''LE> '; PS2=''; bindkey -e; unsetopt beep auto_list; LISTMAX=100000; fpath=(${(q)dir} \$fpath); autoload -Uz compinit; compinit -u -D"
zpty -w tilec_z "compadd() { local -a m; builtin compadd -O m \"\$@\"; (( \${#m} )) && print -rl -- \${m/#/MATCH:} >/dev/tty; builtin compadd \"\$@\"; }"
zpty -w tilec_z "echo READY"
while zpty -r tilec_z out; do [[ $out == READY* ]] && break; done
zpty -r tilec_z out '*ZLE> ' || exit 3
zpty -w -n tilec_z "$*"$'\t'
zpty -w tilec_z $'\C-u'"echo DONE"
while zpty -r tilec_z out; do
    [[ $out == DONE* ]] && break
    [[ $out == *MATCH:* ]] && print -r -- ${${out##*MATCH:}%%$'\r'*}
done
zpty -d tilec_z
