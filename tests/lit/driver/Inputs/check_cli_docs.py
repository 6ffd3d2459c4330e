"""Checks that the man page and the bash and zsh completions list every option `--help` shows (tilec's and
`tilec tune`'s), in every spelling: cli_docs.test. With --live DIR: that bash's completion function, sourced
and called, and zsh's, run by zsh's completion system (complete.zsh), offer each of them after `tilec -` and
`tilec tune -` (the generated scripts written into DIR): cli_completion.test.
Usage: check_cli_docs.py TILEC [--live DIR]"""
import os
import re
import subprocess
import sys

tilec = sys.argv[1]
live = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--live" else None


def run(*args):
    return subprocess.run([tilec, *args], check=True, capture_output=True, text=True).stdout


def help_options(text):
    """The option names of a CLI11 --help: lines like '  -v,--verbose', '  --arch TEXT ...'."""
    names = set()
    for line in text.splitlines():
        m = re.match(r"^  (-[^ ]+)", line)
        if m:
            for n in m.group(1).split(","):
                if n.startswith("-") and n not in ("-h", "--help"):
                    names.add(n)
    return names


single_dash = {"--arch", "--Werror", "--MD", "--MF", "--MT", "--MP", "--lineinfo", "--ccbin", "--use_fast_math",
               "--fdiagnostics-format"}
compile_opts = help_options(run("--help"))
tune_opts = help_options(run("tune", "--help"))
man = run("--help-man").replace("\\-", "-")
bash = run("--completion=bash")
zsh = run("--completion=zsh")
assert len(compile_opts) > 30 and len(tune_opts) > 10, (compile_opts, tune_opts)
missing = []
for n in sorted(compile_opts | tune_opts):
    spellings = [n] + (["-" + n[2:]] if n in single_dash else [])
    for s in spellings:
        if "\\fB" + s + "\\fR" not in man:
            missing.append("man page: " + s)
        if not re.search(r"(^|[\s\"])" + re.escape(s) + r"([\s\"]|$)", bash):
            missing.append("bash: " + s)
        if "'" + s + "[" not in zsh and "'" + s + "=[" not in zsh and "'" + s + "+[" not in zsh:
            missing.append("zsh: " + s)


def live_matches(shell, words):
    """What the completion function offers for the command line `words` (the last one completed)."""
    if shell == "bash":
        script = ('source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _tilec; '
                  'printf "%s\\n" "${COMPREPLY[@]}"')
        out = subprocess.run(["bash", "-c", script, "-", os.path.join(live, "tilec.bash"), *words], check=True,
                             capture_output=True, text=True, timeout=60).stdout
    else:
        here = os.path.dirname(os.path.abspath(__file__))
        out = subprocess.run(["zsh", os.path.join(here, "complete.zsh"), live, *words], check=True,
                             capture_output=True, text=True, timeout=60).stdout
    return set(out.split())


if live:
    with open(os.path.join(live, "tilec.bash"), "w") as f:
        f.write(bash)
    with open(os.path.join(live, "_tilec"), "w") as f:
        f.write(zsh)
    for shell in ("bash", "zsh"):
        for words, opts in ((["tilec", "-"], compile_opts), (["tilec", "tune", "-"], tune_opts)):
            offered = live_matches(shell, words)
            for n in sorted(opts):
                for s in [n] + (["-" + n[2:]] if n in single_dash else []):
                    if s not in offered:
                        missing.append("%s, after '%s': %s" % (shell, " ".join(words), s))
if missing:
    print("missing:\n  " + "\n  ".join(missing))
    sys.exit(1)
print("ok: %d options of tilec, %d of tilec tune%s" % (len(compile_opts), len(tune_opts),
                                                      ", offered by bash and zsh" if live else ""))
