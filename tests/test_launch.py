"""The launch settings (book/_ext/launch.py): one setting, repository.url in _config.yml, decides whether the book
shows launch buttons and repository links. The built pages are checked in test_book_delivery.py."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import yaml

from support import ROOT

sys.path.insert(0, str(ROOT / "book" / "_ext"))
import launch  # noqa: E402


def theme_options(url):
    return {"repository_url": url, "launch_buttons": {"binderhub_url": "https://mybinder.org",
                                                      "colab_url": "https://colab.research.google.com"},
            "use_repository_button": False}


def test_without_a_repository_there_is_nothing_to_launch():
    for url in ("", None, "  "):
        config = SimpleNamespace(html_theme_options=theme_options(url))
        launch.configure(None, config)
        options = config.html_theme_options
        assert options["launch_buttons"] == {} and "repository_url" not in options
        assert not any(options[k] for k in launch.REPOSITORY_BUTTONS)


def test_a_repository_gets_launch_buttons_and_a_link():
    config = SimpleNamespace(html_theme_options=theme_options("https://github.com/someone/posenc-course"))
    launch.configure(None, config)
    options = config.html_theme_options
    assert options["launch_buttons"]["binderhub_url"] and options["launch_buttons"]["colab_url"]
    assert options["use_repository_button"] is True


def test_config_has_one_launch_setting_and_no_placeholder():
    text = (ROOT / "_config.yml").read_text()
    config = yaml.safe_load(text)
    assert "REPLACE" not in text and "example.org" not in text, "a placeholder in _config.yml"
    assert set(config["launch_buttons"]) <= {"notebook_interface", "binderhub_url", "colab_url"}, \
        "launch providers beyond the public ones need settings of their own"
    url = config["repository"]["url"]
    assert url == "" or url.startswith("https://github.com/"), f"repository.url {url!r}: empty or a GitHub URL"
