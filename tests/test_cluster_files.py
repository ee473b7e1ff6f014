"""The cluster path's files (hub/cluster/), checked as far as a machine without Kubernetes or Docker allows: the
chart's values parse and their hub code runs against a class's passwd file, the image's Dockerfile is made of
Dockerfile instructions, copies only files that exist and never the solutions, installs the project's own pinned
requirements, and nothing secret is written in either; what the values say about ngshare_exchange holds for the
pinned environment."""

from __future__ import annotations

import re
import subprocess
import sys
import types

import pytest
import yaml

from support import ROOT

CLUSTER = ROOT / "hub" / "cluster"
VALUES = CLUSTER / "values.yaml"
DOCKERFILE = CLUSTER / "Dockerfile"
PASSWD = CLUSTER / "passwd.py"
IMAGE_ROOT = "/opt/posenc"
INSTRUCTIONS = {"FROM", "RUN", "CMD", "LABEL", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT", "VOLUME", "USER",
                "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL"}
# Names whose value would be a secret: none may carry one in these files
SECRET_KEY = re.compile(r"(password|passwd|secret|token|api[_-]?key|private[_-]?key|client[_-]?id)", re.I)


def values() -> dict:
    return yaml.safe_load(VALUES.read_text())


def instructions() -> list[tuple[str, str]]:
    """The Dockerfile's instructions (continuation lines joined, comments dropped), as (keyword, arguments)."""
    joined, current = [], ""
    for line in DOCKERFILE.read_text().splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.lstrip().startswith("#"):  # a comment inside a continued instruction
            continue
        current += line.rstrip("\\").strip() + " "
        if not line.rstrip().endswith("\\"):
            joined.append(current.strip())
            current = ""
    assert not current, "the Dockerfile ends inside a continued line"
    return [(text.split(None, 1)[0].upper(), text.split(None, 1)[1] if " " in text else "") for text in joined]


def copies() -> list[tuple[list[str], str]]:
    found = []
    for keyword, args in instructions():
        if keyword in ("COPY", "ADD"):
            parts = [p for p in args.split() if not p.startswith("--")]
            found.append((parts[:-1], parts[-1]))
    return found


# ---------------------------------------------------------------------------------------------------------
# The Dockerfile

def test_dockerfile_is_made_of_instructions_and_starts_from_a_base():
    steps = instructions()
    assert steps[0][0] == "FROM", "a Dockerfile starts with FROM (ARG aside)"
    unknown = [keyword for keyword, _ in steps if keyword not in INSTRUCTIONS]
    assert not unknown, f"not Dockerfile instructions: {unknown}"
    base = steps[0][1]
    assert ":" in base and not base.endswith(":latest"), f"the base image is not pinned to a tag: {base}"
    assert any(k == "CMD" and "jupyterhub-singleuser" in a for k, a in steps), "the chart starts jupyterhub-singleuser"


def test_dockerfile_copies_only_what_exists_and_never_the_solutions():
    sources = [source for found, _ in copies() for source in found]
    assert sources, "the image copies the course"
    for source in sources:
        assert (ROOT / source).exists(), f"the Dockerfile copies {source}, which is not in the repository"
        top = source.strip("/").split("/")[0]
        assert top not in (".", "", "solutions", ".git", "_build", "course", "selfstudy", ".jupyter_cache"), (
            f"the image would hold the hidden tests or model answers: COPY {source}")
    assert not any(k == "ADD" for k, _ in instructions()), "ADD fetches URLs and unpacks archives: COPY only"


def test_dockerfile_installs_the_projects_own_pinned_requirements():
    steps = instructions()
    assert (["requirements.txt", "pyproject.toml"], "./") in copies()
    installs = [args for keyword, args in steps if keyword == "RUN" and "pip install" in args]
    assert any(re.search(r"-r requirements\.txt\b", args) for args in installs), "the pinned list, as make install"
    assert not any(re.search(r"pip install[^&]*\b(torch|numpy|jupyterhub|nbgrader)\b(?!\.)", args)
                   for args in installs), "every package comes from requirements.txt, none unpinned beside it"
    # torch's CPU build: requirements.txt pins torch==2.13.0+cpu, which the CPU index serves
    assert re.search(r"^torch==2\.13\.0\+cpu$", (ROOT / "requirements.txt").read_text(), re.M)
    assert any("download.pytorch.org/whl/cpu" in args for args in installs)
    # the course installed without dependencies (all came from the pinned list), and importable
    assert any("--no-deps" in args and re.search(r"-e \.(\s|$)", args) for args in installs)
    assert any("import numpy, torch, posenc, autograder.checks" in args for keyword, args in steps if keyword == "RUN")


def test_the_image_holds_every_folder_the_values_name():
    """Each /opt/posenc/... path of values.yaml is in the repository, and in the image (a COPY destination) unless
    it is solutions/, which only the instructor's pod mounts."""
    text = VALUES.read_text()
    named = set(re.findall(rf"{IMAGE_ROOT}/([\w./-]+)", text))
    assert named >= {"hub/jupyter/student", "hub/jupyter/instructor", "solutions"}
    copied = [dest.rstrip("/") for _, dest in copies() if dest not in ("./",)]
    for rel in named:
        assert (ROOT / rel).exists(), f"values.yaml names {IMAGE_ROOT}/{rel}, not in the repository"
        if rel != "solutions":
            assert any(rel == d or rel.startswith(d + "/") for d in copied), f"{rel} is not copied into the image"
    for role in ("student", "instructor"):
        assert (ROOT / "hub" / "jupyter" / role / "nbgrader_config.py").is_file()
    env = values()["singleuser"]["extraEnv"]
    assert env["JUPYTER_CONFIG_PATH"] == f"{IMAGE_ROOT}/hub/jupyter/student"
    assert env["POSENC_EXCHANGE_DIR"] == "/srv/nbgrader/exchange"
    mounts = {m["mountPath"] for m in values()["singleuser"]["storage"]["extraVolumeMounts"]}
    assert {"/srv/nbgrader/exchange", "/etc/passwd"} <= mounts


# ---------------------------------------------------------------------------------------------------------
# The chart's values

def test_values_cull_idle_servers_as_the_one_machine_hub_does():
    cull = values()["cull"]
    default = re.search(r'POSENC_HUB_IDLE_TIMEOUT", "(\d+)"', (ROOT / "hub" / "jupyterhub_config.py").read_text())
    assert cull["enabled"] is True and cull["timeout"] == int(default.group(1))


def test_no_secret_is_written_in_the_cluster_files():
    def walk(node, path=""):
        if isinstance(node, dict):
            for key, value in node.items():
                if SECRET_KEY.search(str(key)) and isinstance(value, (str, int)) and str(value).strip():
                    pytest.fail(f"values.yaml sets {path}{key}: secrets go in Kubernetes Secrets")
                walk(value, f"{path}{key}.")
        elif isinstance(node, list):
            for item in node:
                walk(item, path)

    walk(values())
    for path in (VALUES, DOCKERFILE, PASSWD):
        text = path.read_text()
        assert "PRIVATE KEY" not in text
        assert not re.search(r"(password|secret|token)\s*[:=]\s*['\"]?[A-Za-z0-9+/]{16,}", text, re.I), path.name
    for keyword, args in instructions():
        if keyword in ("ENV", "ARG"):
            assert not SECRET_KEY.search(args), f"the image would carry a secret: {keyword} {args}"


def test_what_the_values_say_about_ngshare_holds_for_the_pinned_environment():
    text = VALUES.read_text()
    assert "ngshare_exchange 0.5.3" in text and "jupyter-core<4.11.2" in text
    pinned = re.search(r"^jupyter[-_]core==(\d+)\.(\d+)\.(\d+)$", (ROOT / "requirements.txt").read_text(), re.M)
    assert tuple(map(int, pinned.groups())) >= (4, 11, 2), "ngshare_exchange would now install: say so in values.yaml"
    factory = (ROOT / "hub" / "jupyter" / "exchange_config.py").read_text()
    assert "autograder.exchange.CollectFromOwner" in factory  # the hardened exchange the values rely on


# ---------------------------------------------------------------------------------------------------------
# One uid per person: passwd.py and the hub's code in the values

def class_passwd(tmp_path, students: list[str], instructor: str = "teacher") -> subprocess.CompletedProcess:
    roster = tmp_path / "class.csv"
    roster.write_text("id,first_name,last_name,email\n" + "".join(f"{s},A,B,\n" for s in students))
    return subprocess.run([sys.executable, str(PASSWD), str(roster), "--instructor", instructor],
                          capture_output=True, text=True, cwd=tmp_path)


def test_passwd_gives_each_person_a_uid_of_their_own(tmp_path):
    done = class_passwd(tmp_path, ["ada", "bob", "carol"])
    assert done.returncode == 0, done.stderr
    lines = [line.split(":") for line in done.stdout.splitlines()]
    assert all(len(fields) == 7 for fields in lines)
    people = {f[0]: int(f[2]) for f in lines if 20000 <= int(f[2]) < 60000}
    assert people == {"teacher": 20000, "ada": 20001, "bob": 20002, "carol": 20003}
    assert {f[0] for f in lines} >= {"root", "jovyan"}  # the image's own accounts stay when this replaces /etc/passwd
    assert class_passwd(tmp_path, ["ada", "ada"]).returncode == 2
    assert class_passwd(tmp_path, ["root"]).returncode == 2


def test_the_hubs_code_gives_each_pod_its_persons_uid_and_role(tmp_path):
    passwd = class_passwd(tmp_path, ["ada", "bob"], instructor="instructor").stdout
    code = values()["hub"]["extraConfig"]["posenc"]
    config = types.SimpleNamespace(Authenticator=types.SimpleNamespace(), KubeSpawner=types.SimpleNamespace())
    real_open = open

    def fake_open(path, *args, **kwargs):
        if path == "/etc/posenc/passwd":
            (tmp_path / "passwd").write_text(passwd)
            return real_open(tmp_path / "passwd", *args, **kwargs)
        return real_open(path, *args, **kwargs)

    exec(compile(code, "values.yaml:hub.extraConfig.posenc", "exec"), {"c": config, "open": fake_open})
    assert config.Authenticator.allowed_users == {"instructor", "ada", "bob"}
    assert values()["hub"]["config"]["Authenticator"]["admin_users"] == ["instructor"]
    hook = config.KubeSpawner.pre_spawn_hook
    shared_env = {"JUPYTER_CONFIG_PATH": f"{IMAGE_ROOT}/hub/jupyter/student"}

    def spawn(name):
        spawner = types.SimpleNamespace(user=types.SimpleNamespace(name=name), environment=shared_env,
                                        volumes=[], volume_mounts=[])
        hook(spawner)
        return spawner

    ada, bob, teacher = spawn("ada"), spawn("bob"), spawn("instructor")
    assert (ada.uid, bob.uid, teacher.uid) == (20001, 20002, 20000)
    assert ada.environment["JUPYTER_CONFIG_PATH"].endswith("/student")
    assert teacher.environment["JUPYTER_CONFIG_PATH"] == f"{IMAGE_ROOT}/hub/jupyter/instructor"
    assert shared_env["JUPYTER_CONFIG_PATH"].endswith("/student"), "the instructor's settings leaked to students"
    assert not ada.volume_mounts and [m["mountPath"] for m in teacher.volume_mounts] == [f"{IMAGE_ROOT}/solutions"]
    assert "POSENC_DB_URL" not in ada.environment and "secretKeyRef" in str(teacher.environment["POSENC_DB_URL"])
