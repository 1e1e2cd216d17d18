#!/usr/bin/python3
"""Reads one recipe of examples/, checks the keys its runner requires, and prints the
commands it runs as a bash script for scripts/examples-test.sh to execute against a test
server. Usage: examples-recipe.py crontab|systemd|github|gitlab|kubernetes|jenkins FILE

What the test server stands in for is left out of the printed script: RLOCK_URL and the
password come from the test's environment, not the recipe's. A field the runner fills in
(GitHub's ${{ github.run_id }}, Kubernetes' metadata.name) becomes a variable the test
sets. Exits 1 with one line on stderr naming what is wrong."""

import re
import shlex
import sys

import yaml

# crontab(5) fields: minute, hour, day of month, month, day of week.
CRON_RANGES = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 7)]
NAMED = {3: "jan feb mar apr may jun jul aug sep oct nov dec", 4: "sun mon tue wed thu fri sat"}
# Set by the test, never by the recipe: the test server and its (absent) password.
SERVER_VARS = {"RLOCK_URL", "REDIS_URL", "RLOCK_PASSWORD"}


def fail(what):
    sys.exit(f"examples-recipe: {sys.argv[2]}: {what}")


def check_cron_field(i, field):
    lo, hi = CRON_RANGES[i]
    names = NAMED.get(i, "").split()
    for part in field.split(","):
        m = re.fullmatch(r"(\*|[0-9a-z]+(?:-[0-9a-z]+)?)(?:/([0-9]+))?", part)
        if not m or (m.group(2) is not None and int(m.group(2)) == 0):
            fail(f"cron field {i + 1} '{field}' is malformed")
        if m.group(1) == "*":
            continue
        for v in m.group(1).split("-"):
            n = names.index(v) + lo if v in names else int(v) if v.isdigit() else None
            if n is None or not lo <= n <= hi:
                fail(f"cron field {i + 1} '{field}' is out of range {lo}-{hi}")


def check_schedule(schedule):
    fields = schedule.split()
    if len(fields) != 5:
        fail(f"schedule '{schedule}' does not have 5 fields")
    for i, f in enumerate(fields):
        check_cron_field(i, f)


def crontab(path):
    commands = []
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("#") or re.match(r"[A-Za-z_]+\s*=", line):
            continue
        fields = line.split(None, 5)
        if len(fields) < 6:
            fail(f"entry '{line}' has no command")
        check_schedule(" ".join(fields[:5]))
        # cron turns an unescaped % into a newline and feeds the rest to stdin.
        if re.search(r"(?<!\\)%", fields[5]):
            fail(f"command '{fields[5]}' has an unescaped %")
        commands.append(fields[5])
    if not commands:
        fail("no entry")
    return commands


def systemd(path):
    commands = [line.split("=", 1)[1].strip() for line in open(path) if line.startswith("ExecStart=")]
    if len(commands) != 1:
        fail("wants exactly one ExecStart=")
    return commands


def exports(variables, expand):
    out = []
    for name, value in (variables or {}).items():
        if name not in SERVER_VARS:
            out.append(f"export {name}={expand(str(value))}")
    return out


def github_expression(m):
    context, _, name = m.group(1).partition(".")
    if context != "github":
        fail(f"expression ${{{{ {m.group(1)} }}}} outside the github context in a non-server variable")
    return "${GITHUB_" + name.upper() + "}"  # the runner sets these too


def github(path):
    doc = yaml.safe_load(open(path))
    on = doc.get("on", doc.get(True))  # YAML 1.1 reads a bare `on` key as true
    if not on or not doc.get("jobs"):
        fail("wants 'on' and 'jobs'")
    lines = []
    for job_name, job in doc["jobs"].items():
        if "runs-on" not in job or not job.get("steps"):
            fail(f"job {job_name} wants 'runs-on' and 'steps'")
        expand = lambda v: '"' + re.sub(r"\$\{\{\s*([\w.]+)\s*\}\}", github_expression, v) + '"'
        lines += exports(job.get("env"), expand)
        for step in job["steps"]:
            if ("uses" in step) == ("run" in step):
                fail(f"a step of {job_name} wants one of 'uses' and 'run'")
            if "run" in step:
                lines.append(step["run"])
    return lines


def gitlab(path):
    doc = yaml.safe_load(open(path))
    stages = doc.get("stages", ["build", "test", "deploy"])
    lines = []
    for job_name, job in doc.items():
        if job_name in ("stages", "variables", "default", "include", "workflow") or job_name.startswith("."):
            continue
        if not isinstance(job.get("script"), list) or not job["script"]:
            fail(f"job {job_name} wants a 'script' list")
        if job.get("stage", "test") not in stages:
            fail(f"job {job_name}'s stage is not in 'stages'")
        lines += exports(job.get("variables"), lambda v: '"' + v + '"')  # GitLab expands $VAR
        lines += job["script"]
    return lines


def kubernetes(path):
    doc = yaml.safe_load(open(path))
    if doc.get("apiVersion") != "batch/v1" or doc.get("kind") != "CronJob":
        fail("wants apiVersion batch/v1 and kind CronJob")
    check_schedule(doc["spec"]["schedule"])
    pod = doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    if pod.get("restartPolicy") not in ("Never", "OnFailure"):
        fail("a Job's pod wants restartPolicy Never or OnFailure")
    lines = []
    for c in pod["containers"]:
        if not c.get("name") or not c.get("image") or not isinstance(c.get("command"), list):
            fail("a container wants 'name', 'image' and a 'command' list")
        for e in c.get("env", []):
            name = e["name"]
            if name in SERVER_VARS:
                continue
            if "value" in e:
                lines.append(f"export {name}={shlex.quote(str(e['value']))}")
            elif e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "metadata.name":
                lines.append(f'export {name}="$POD_NAME"')
            else:
                fail(f"env {name}: only value and fieldRef metadata.name are known here")
        lines.append(shlex.join(c["command"]))
    return lines


def jenkins(path):
    """A declarative Jenkinsfile: its environment block's NAME = "VALUE" lines (Jenkins'
    ${env.X} is the agent's $X) and the shell of its sh '''...''' steps (a Groovy string
    with no interpolation: the shell gets it as written)."""
    text = open(path).read()
    for needed in ("pipeline {", "agent ", "stages {", "stage(", "steps {"):
        if needed not in text:
            fail(f"a declarative pipeline wants '{needed}'")
    lines = []
    env = re.search(r"environment \{(.*?)\n\s*\}", text, re.S)
    for name, value in re.findall(r'^\s*(\w+)\s*=\s*"([^"]*)"', env.group(1) if env else "", re.M):
        if name not in SERVER_VARS:
            lines.append(f'export {name}="' + re.sub(r"\$\{env\.(\w+)\}", r"${\1}", value) + '"')
    steps = re.findall(r"sh '''(.*?)'''", text, re.S)
    if not steps:
        fail("no sh '''...''' step")
    return lines + [s.strip() for s in steps]


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: examples-recipe.py crontab|systemd|github|gitlab|kubernetes|jenkins FILE")
    kinds = {"crontab": crontab, "systemd": systemd, "github": github, "gitlab": gitlab,
             "kubernetes": kubernetes, "jenkins": jenkins}
    if sys.argv[1] not in kinds:
        sys.exit(f"examples-recipe: unknown kind {sys.argv[1]}")
    print("\n".join(kinds[sys.argv[1]](sys.argv[2])))
