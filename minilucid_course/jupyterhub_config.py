# A JupyterHub for a minilucid class, on one machine or a server with an account per student.
#
#   make class CLASS=/srv/minilucid-class EXCHANGE=/srv/nbgrader/exchange   (docs/teaching.md)
#   make setup EXTRAS=course,teacher,hub; npm install -g configurable-http-proxy
#   MINILUCID_CLASS=/srv/minilucid-class \
#       .venv/bin/jupyterhub -f minilucid_course/jupyterhub_config.py
#
# Each student's server is JupyterLab from this course's environment, started in the student's
# home with the course's settings: nbgrader's Assignments tab on (fetch and submit through the
# class's exchange, read from the class folder's student_nbgrader_config.py), its teacher tools
# off. The course reaches the home through
# nbgitpuller links (python -m minilucid_course.hosting --hub ...): the first click clones the
# repository, later ones pull updates and keep the student's changes. The first page is chapter 00.
#
# Settings, from the environment:
#   MINILUCID_CLASS         the class folder made by `make class` (its exchange is shared)
#   MINILUCID_HUB_IP/PORT   where the hub listens (default 127.0.0.1:8000; put TLS in front)
#   MINILUCID_HUB_DIR       where the hub keeps its database, cookie secret and the students'
#                           nbgrader settings (default: the folder it starts in)
#   MINILUCID_HUB_AUTH      pam (default: the machine's accounts) or dummy (any name, for trials)
#   MINILUCID_HUB_SPAWNER   localprocess (default: each student's server as their own user) or
#                           simple (every server as the hub's user, homes under the hub's folder;
#                           for trials only)
#   MINILUCID_HUB_FOLDER    the folder nbgitpuller clones the course into (default: minilucid)
import os
import sys
from pathlib import Path

c = get_config()  # noqa: F821 (JupyterHub defines it)

environ = os.environ
here = Path(environ.get("MINILUCID_HUB_DIR", os.getcwd())).resolve()
bin_dir = Path(sys.executable).parent  # the course's environment
folder = environ.get("MINILUCID_HUB_FOLDER", "minilucid")

c.JupyterHub.ip = environ.get("MINILUCID_HUB_IP", "127.0.0.1")
c.JupyterHub.port = int(environ.get("MINILUCID_HUB_PORT", "8000"))
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.db_url = f"sqlite:///{here / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(here / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(here / "jupyterhub.pid")
c.ConfigurableHTTPProxy.pid_file = str(here / "jupyterhub-proxy.pid")

if environ.get("MINILUCID_HUB_AUTH", "pam") == "dummy":
    c.JupyterHub.authenticator_class = "dummy"
else:
    c.JupyterHub.authenticator_class = "pam"
c.Authenticator.allow_all = True  # narrow with c.Authenticator.allowed_users = {...}

if environ.get("MINILUCID_HUB_SPAWNER", "localprocess") == "simple":
    c.JupyterHub.spawner_class = "simple"
    c.SimpleLocalProcessSpawner.home_dir_template = str(here / "homes" / "{username}")
else:
    c.JupyterHub.spawner_class = "localprocess"

# the students' nbgrader: the class's exchange and course, nothing of the teacher's
student_config = here / "student-config"
class_folder = environ.get("MINILUCID_CLASS")
if class_folder:
    student_config.mkdir(parents=True, exist_ok=True)
    settings = (Path(class_folder) / "student_nbgrader_config.py").read_text(encoding="utf-8")
    (student_config / "nbgrader_config.py").write_text(settings, encoding="utf-8")

STUDENT_EXTENSIONS = {
    "nbgrader.server_extensions.assignment_list": True,
    "nbgrader.server_extensions.course_list": False,
    "nbgrader.server_extensions.formgrader": False,
    "nbgrader.server_extensions.validate_assignment": True,
    "nbgitpuller": True,
}
c.Spawner.cmd = [str(bin_dir / "jupyterhub-singleuser")]
c.Spawner.args = [f"--ServerApp.jpserver_extensions={STUDENT_EXTENSIONS!r}"]
if os.geteuid() == 0 and c.JupyterHub.spawner_class == "simple":
    c.Spawner.args.append("--allow-root")
c.Spawner.default_url = f"/lab/tree/{folder}/notebooks/00_welcome.ipynb"
c.Spawner.environment = {
    "PATH": f"{bin_dir}{os.pathsep}{environ.get('PATH', '/usr/bin:/bin')}",
    "JUPYTER_PREFER_ENV_PATH": "1",
    "JUPYTER_CONFIG_PATH": str(student_config),
}
