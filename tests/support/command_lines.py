"""Real-world command lines: those that carry secrets (with the secrets), and those
that carry none. Blame must record the first without their secrets and the second as
they are (tests/fs/test_blame_secrets.py, through a mount in tests/fuse)."""

from __future__ import annotations

GH_TOKEN = "ghp_0123456789abcdefghijABCDEFGHIJ012345"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

SECRETS: list[tuple[tuple[str, ...], tuple[str, ...]]] = [
    (
        (
            "curl",
            "-sS",
            "-H",
            "Authorization: Bearer eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJl",
            "https://api.example.com/v1",
        ),
        ("eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJl", "eyJzdWIiOi"),
    ),
    (
        ("curl", "--header", "X-Api-Key: k3y-abcdef-123456", "https://x.example"),
        ("k3y-abcdef-123456",),
    ),
    (("curl", "-H", "Cookie: session=c00kieValue99", "https://x.example"), ("c00kieValue99",)),
    (("curl", "-u", "admin:Adm1nPass", "https://x.example"), ("Adm1nPass",)),
    (("git", "clone", "https://alice:hunter2pass@git.example.com/team/repo.git"), ("hunter2pass",)),
    (
        ("git", "push", f"https://x-access-token:{GH_TOKEN}@github.com/o/r.git", "main"),
        (GH_TOKEN,),
    ),
    (("git", "clone", f"https://{GH_TOKEN}@github.com/o/r.git"), (GH_TOKEN,)),
    (("mysql", "-u", "root", "-pS3cretPass", "shop"), ("S3cretPass",)),
    (("mysql", "--user=root", "--password=S3cretPass", "shop"), ("S3cretPass",)),
    (("psql", "postgresql://app:pgS3cret@db.internal:5432/app"), ("pgS3cret",)),
    (("mongosh", "mongodb+srv://u:mongoS3cret@cluster0.example.net/db"), ("mongoS3cret",)),
    (("aws", "s3", "ls", "--secret-access-key", AWS_SECRET), (AWS_SECRET,)),
    (("aws", "configure", "set", "aws_secret_access_key", AWS_SECRET), (AWS_SECRET,)),
    (
        (
            "env",
            f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}",
            "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
            "aws",
            "s3",
            "ls",
        ),
        (AWS_SECRET, "AKIAIOSFODNN7EXAMPLE"),
    ),
    (
        ("docker", "login", "-u", "bot", "-p", "dckrP4ssw0rd", "registry.example.com"),
        ("dckrP4ssw0rd",),
    ),
    (("docker", "login", "--password", "dckrP4ssw0rd", "registry.example.com"), ("dckrP4ssw0rd",)),
    (
        (
            "npm",
            "publish",
            "--//registry.npmjs.org/:_authToken=npm_abcdefghijklmnopqrstuvwxyz0123456789",
        ),
        ("npm_abcdefghijklmnopqrstuvwxyz0123456789",),
    ),
    (
        ("npm", "config", "set", "//registry.npmjs.org/:_authToken", "s3cr3t-npm-t0ken"),
        ("s3cr3t-npm-t0ken",),
    ),
    (("sh", "-c", f"echo {GH_TOKEN} | gh auth login --with-token"), (GH_TOKEN,)),
    (("gh", "auth", "login", "--with-token", GH_TOKEN), (GH_TOKEN,)),
    (
        ("bash", "-c", "export GITHUB_TOKEN=ghs_abcdefghijklmnopqrstuvwxyz0123; make release"),
        ("ghs_abcdefghijklmnopqrstuvwxyz0123",),
    ),
    (("sh", "-c", "export GITHUB_TOKEN=plainTokenValue77 && ./deploy.sh"), ("plainTokenValue77",)),
    (
        ("docker", "run", "--rm", "-e", "API_KEY=abc123secretvalue", "-p", "8080:80", "app"),
        ("abc123secretvalue",),
    ),
    (("podman", "run", "--env=DB_PASSWORD=dbS3cretPw", "app"), ("dbS3cretPw",)),
    (
        ("python3", "agent.py", "--api-key=sk-ant-api03-abcdefghijklmnopqrstu", "--model", "x"),
        ("sk-ant-api03-abcdefghijklmnopqrstu",),
    ),
    (("mytool", "--password", "p4ssw0rd-here", "--verbose"), ("p4ssw0rd-here",)),
    (
        ("mytool", "--client-secret", "cl13ntS3cret", "--token=t0kenValue"),
        ("cl13ntS3cret", "t0kenValue"),
    ),
    (
        ("curl", "https://api.example.com/data?access_token=tok9f8e7d6c&page=2&sig=S1gnatur3"),
        ("tok9f8e7d6c", "S1gnatur3"),
    ),
    (("sshpass", "-p", "sshS3cret", "ssh", "user@host"), ("sshS3cret",)),
    (("redis-cli", "-a", "redisS3cret", "ping"), ("redisS3cret",)),
    (("git", "config", "--global", "user.password", "gitS3cretPw"), ("gitS3cretPw",)),
    (("env", "PGPASSWORD=pgPw123456", "psql", "-h", "db"), ("pgPw123456",)),
    (
        ("python", "-c", "print(1)", "--openai", "sk-proj-abcdefghijklmnopqrstuvwx"),
        ("sk-proj-abcdefghijklmnopqrstuvwx",),
    ),
    (
        ("curl", "-H", "PRIVATE-TOKEN: glpat-abcdefghijklmnopqrst", "https://gitlab.example"),
        ("glpat-abcdefghijklmnopqrst",),
    ),
    (("slack-notify", "xoxb-123456789012-abcdefghijkl"), ("xoxb-123456789012-abcdefghijkl",)),
]

PLAIN: list[tuple[str, ...]] = [
    ("sh", "-c", "echo v2 > /tmp/ws/src/app.py"),
    ("mkdir", "-p", "build/out"),
    ("docker", "run", "-p", "8080:80", "nginx"),
    ("git", "commit", "-m", "fix token refresh"),
    ("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_token.py"),
    ("grep", "-rn", "password", "src/"),
    ("ssh", "-p", "2222", "git@github.com"),
    ("git", "clone", "git@github.com:o/r.git"),
    ("git", "clone", "https://github.com/o/r.git"),
    ("curl", "-H", "Accept: application/json", "https://x.example/?page=2"),
    ("cc", "-o", "app", "app.c"),
    ("vim", "secrets.yaml", "api_key.txt"),
    ("env", "PATH=/usr/bin", "HOME=/root", "make", "-j4"),
    ("worker", "--queue", "task-abcdefghijklmnopqrstuvwxyz", "--max-tokens", "256"),
    ("git", "commit", "--author", "A U Thor <a@example.com>", "-m", "x"),
]
