"""Checks that the man page and the bash and zsh completions list every option `--help` shows (tilec's and
`tilec tune`'s), in every spelling: cli_docs.test. Usage: check_cli_docs.py TILEC"""
import re
import subprocess
import sys

tilec = sys.argv[1]


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
if missing:
    print("missing:\n  " + "\n  ".join(missing))
    sys.exit(1)
print("ok: %d options of tilec, %d of tilec tune" % (len(compile_opts), len(tune_opts)))
