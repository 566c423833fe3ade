"""Secrets out of command lines, before blame records them.

A cause names the command line of the process that wrote (``/proc/<pid>/cmdline``,
a daemon client's ``sys.argv``) or, for a sandbox's shell call, the line it ran.
Command lines carry secrets: ``curl -H 'Authorization: Bearer ...'``, ``mysql
-pSECRET``, ``git clone https://user:pass@host/...``, ``env GITHUB_TOKEN=...``.
History is kept, shown (``blame``, ``log --files``, the API, the debug UI) and
persisted to git, whose objects ``push`` sends away, so the tree records a
cause's command and label through ``redact_command`` and ``redact_text``
(unless its workspace asks for full lines, ``Tree.blame_full_commands``).

What is masked (with ``***``), argument by argument:

* a flag whose name looks secret (``--password X``, ``--api-key=X``,
  ``--//registry.npmjs.org/:_authToken=X``) and a ``NAME VALUE`` pair whose
  name's last part looks secret (``git config user.password X``, ``aws
  configure set aws_secret_access_key X``);
* ``NAME=value`` whose name looks secret (``AWS_SECRET_ACCESS_KEY=...``,
  ``-e API_KEY=...``, ``export GITHUB_TOKEN=...``), also after a flag
  (``--env=DB_PASSWORD=...``);
* a header whose name looks secret (``Authorization: ...``, ``Cookie: ...``,
  ``X-Api-Key: ...``, ``PRIVATE-TOKEN: ...``);
* the password of a URL (``https://user:***@host``), a user part that is a
  token, and query parameters whose name looks secret (``?access_token=``);
* the values of a few programs' short flags: ``mysql -p***``, ``docker login
  -p``, ``sshpass -p``, ``redis-cli -a``, ``mongosh -p``, ``curl -u user:***``;
* anything shaped like a well-known token (GitHub, GitLab, AWS key ids, Slack,
  OpenAI/Anthropic ``sk-``, Stripe, Google, npm, PyPI, Hugging Face, JWTs).

A name "looks secret" when it holds password, passwd, secret, credential,
authorization, apikey or privatekey, or one of its words is key, token, pass,
pw, pwd, auth, pat, sig, cookie or cred(s) (``PWD`` itself, the working
directory, is not). An argument holding spaces (``sh -c '...'``) is read as a
shell line, word by word. The program and the line's shape stay; what is
masked errs on the side of too much.
"""

from __future__ import annotations

import functools
import posixpath
import re
import shlex
from collections.abc import Callable, Sequence

MASK = "***"
"""What a secret is replaced with."""

_SUBSTRINGS = (
    "password",
    "passwd",
    "secret",
    "credential",
    "authorization",
    "apikey",
    "privatekey",
)
_WORDS = frozenset(
    {"key", "token", "pass", "pw", "pwd", "auth", "pat", "sig", "cookie", "cred", "creds"}
)
_NOT_SECRET = frozenset({"pwd", "oldpwd"})
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")

# Each shape starts a word (``task-...`` holds no ``sk-`` token), which also keeps
# the scan linear: a run of ``eyJeyJ...`` is tried once, not from every ``eyJ``.
_TOKEN_SHAPES = re.compile(
    r"(?<![A-Za-z0-9_-])(?:gh[pousr]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}"
    r"|glpat-[A-Za-z0-9_-]{20,}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"
    r"|sk-[A-Za-z0-9_-]{20,}"
    r"|[rs]k_(?:live|test)_[A-Za-z0-9]{16,}"
    r"|AIza[0-9A-Za-z_-]{35}"
    r"|npm_[A-Za-z0-9]{36}"
    r"|pypi-[A-Za-z0-9_-]{50,}"
    r"|hf_[A-Za-z0-9]{30,}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)"
)
_URL_USER = re.compile(
    r"(?P<head>[A-Za-z][A-Za-z0-9+.-]{0,31}://)(?P<user>[^/@\s:?#]*)(?::(?P<password>[^/@\s?#]*))?@"
)
_QUERY = re.compile(r"(?P<head>[?&;](?P<name>[^=&#\s?;]+)=)(?P<value>[^&#\s;]*)")
_ASSIGNMENT = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_.-]*)=(?P<value>.*)$", re.DOTALL)
_HEADER = re.compile(r"^(?P<name>[A-Za-z][A-Za-z0-9-]*):(?P<space>[ \t]*)\S", re.DOTALL)

# Programs whose short flags take a secret, and which ones.
_NEXT_IS_SECRET: dict[str, frozenset[str]] = {
    "sshpass": frozenset({"-p"}),
    "redis-cli": frozenset({"-a"}),
    **dict.fromkeys(
        ("mongo", "mongosh", "mongodump", "mongorestore", "mongoexport", "mongoimport"),
        frozenset({"-p"}),
    ),
}
_LOGIN_PROGRAMS = frozenset(
    {"docker", "podman", "nerdctl", "buildah", "skopeo", "helm", "oras", "crane", "finch"}
)
"""``-p`` is a password after ``login`` (and a port, elsewhere)."""
_USER_FLAGS: dict[str, frozenset[str]] = {"curl": frozenset({"-u", "--user", "-U", "--proxy-user"})}
"""``user:password`` values: the part after the first ``:`` is masked."""
_ATTACHED_P = frozenset(
    {
        "mysql",
        "mysqldump",
        "mysqladmin",
        "mysqlimport",
        "mysqlshow",
        "mysqlcheck",
        "mysqlpump",
        "mariadb",
        "mariadb-dump",
        "mariadb-admin",
    }
)
"""``-pSECRET``: the password joined to its flag."""

_PROGRAMS = _ATTACHED_P | _LOGIN_PROGRAMS | set(_NEXT_IS_SECRET) | set(_USER_FLAGS)

# A word: unquoted characters, quoted strings (an unclosed quote runs to the end,
# so no position is scanned twice) and escapes.
_SHELL_WORD = re.compile(
    r"""(?:[^\s'"\\;&|()<>]+|'[^']*(?:'|$)|"(?:[^"\\]|\\(?:.|$))*(?:"|$)|\\(?:.|$))+""", re.DOTALL
)
_NESTING = 4
"""How deep shell lines inside arguments are read (``sh -c "bash -c '...'"``)."""


def secret_name(name: str) -> bool:
    """Whether a flag, variable, header or parameter called ``name`` holds a secret."""
    lower = name.lower()
    if lower in _NOT_SECRET:
        return False
    squashed = re.sub(r"[^a-z0-9]", "", lower)
    if any(part in squashed for part in _SUBSTRINGS):
        return True
    return any(word.lower() in _WORDS for word in _WORD.findall(name))


def _mask_all(_: str) -> str:
    return MASK


def _mask_password(value: str) -> str:
    user, sep, _ = value.partition(":")
    return f"{user}:{MASK}" if sep else value


def _url_user(match: re.Match[str]) -> str:
    user, password = match["user"], match["password"]
    if password is not None:
        return f"{match['head']}{user}:{MASK}@"
    if _TOKEN_SHAPES.fullmatch(user) or len(user) >= 20:
        return f"{match['head']}{MASK}@"
    return match[0]


def _query(match: re.Match[str]) -> str:
    return match["head"] + MASK if secret_name(match["name"]) and match["value"] else match[0]


def _argument(text: str, depth: int) -> str:
    """One argument with what it holds masked (flags, assignments, headers, URLs,
    token shapes; a shell line word by word)."""
    if text.startswith("-") and "=" in text:
        flag, _, value = text.partition("=")
        if secret_name(flag.lstrip("-")):
            return f"{flag}={MASK}" if value else text
        return f"{flag}={_argument(value, depth)}"
    if assignment := _ASSIGNMENT.match(text):
        name, value = assignment["name"], assignment["value"]
        if secret_name(name):
            return f"{name}={MASK}" if value else text
        return f"{name}={_argument(value, depth)}"
    if (header := _HEADER.match(text)) and secret_name(header["name"]):
        return f"{header['name']}:{header['space'] or ' '}{MASK}"
    text = _URL_USER.sub(_url_user, text)
    text = _QUERY.sub(_query, text)
    text = _TOKEN_SHAPES.sub(MASK, text)
    if depth < _NESTING and any(c.isspace() for c in text):
        text = _shell_line(text, depth + 1)
    return text


def _pending(
    argument: str, programs: set[str], login: bool, following: str | None
) -> Callable[[str], str] | None:
    """What the argument after ``argument`` is masked with (None: it is read as itself)."""
    if following is None:
        return None
    for program in programs:
        if argument in _USER_FLAGS.get(program, ()):
            return _mask_password
        if argument in _NEXT_IS_SECRET.get(program, ()):
            return _mask_all
    if argument == "-p" and login and programs & _LOGIN_PROGRAMS:
        return _mask_all
    if following.startswith("-") or "=" in argument:
        return None
    if argument.startswith("--"):
        return _mask_all if secret_name(argument[2:]) else None
    if not argument.startswith("-") and re.search(r"[._:/-]", argument):
        # ``NAME VALUE``: ``user.password X``, ``aws_secret_access_key X``; a file name
        # (``api_key.txt``) ends in something else.
        last = re.split(r"[.:/]", argument)[-1]
        return _mask_all if last and secret_name(last) else None
    return None


def _command(argv: Sequence[str], depth: int) -> tuple[str, ...]:
    found: list[str] = []
    programs: set[str] = set()
    login = False
    masking: Callable[[str], str] | None = None
    for index, argument in enumerate(argv):
        if masking is not None:
            found.append(masking(argument))
            masking = None
            continue
        program = posixpath.basename(argument)
        if program in _PROGRAMS:
            programs.add(program)
        login = login or argument == "login"
        if programs & _ATTACHED_P and argument.startswith("-p") and len(argument) > 2:
            found.append("-p" + MASK)
            continue
        following = argv[index + 1] if index + 1 < len(argv) else None
        masking = _pending(argument, programs, login, following)
        found.append(_argument(argument, depth))
    return tuple(found)


def _shell_line(text: str, depth: int) -> str:
    """``text`` read as a shell line: each word redacted as an argument, the rest
    (spaces, quotes of words left alone, ``;``, ``|``, ``&&``) kept."""
    spans = [(m.start(), m.end(), m[0]) for m in _SHELL_WORD.finditer(text)]
    values = []
    for _, _, raw in spans:
        try:
            words = shlex.split(raw)
        except ValueError:  # an unbalanced quote: the word as written
            words = [raw]
        values.append(words[0] if len(words) == 1 else raw)
    redacted = _command(values, depth)
    pieces = []
    at = 0
    for (start, end, raw), value, new in zip(spans, values, redacted, strict=True):
        pieces.append(text[at:start])
        pieces.append(raw if new == value else new if raw == value else shlex.quote(new))
        at = end
    pieces.append(text[at:])
    return "".join(pieces)


@functools.lru_cache(maxsize=256)
def redact_command(argv: tuple[str, ...]) -> tuple[str, ...]:
    """``argv`` with its secrets masked (see the module's docstring); the same
    number of arguments, each as it was when it holds none.

    Cached: a daemon sees one client's command line with every call.
    """
    return _command(argv, 0)


@functools.lru_cache(maxsize=256)
def redact_text(text: str) -> str:
    """A command line written as one string (a sandbox's shell line, a label) with
    its secrets masked, word by word as ``redact_command`` masks arguments."""
    return _shell_line(text, 0)
