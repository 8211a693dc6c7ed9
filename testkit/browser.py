"""Headless Debian Chromium driven by Selenium, nothing downloaded at run time: the console's browser tests
and `benchmark.console_latency --browser` start it the same way."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")
NO_BROWSER = "no browser: install Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)"

# Without the background-networking flags Chromium keeps calling hosts this closed network refuses.
FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def available() -> bool:
    return CHROMIUM is not None and CHROMEDRIVER is not None


@contextlib.contextmanager
def headless_chromium(profile: Path, downloads: Path | None = None, window: str = "1440,1000") -> Iterator[WebDriver]:
    """A fresh headless Chromium with its own profile directory; quit on exit."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    if not available():
        raise RuntimeError(NO_BROWSER)
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM or ""
    for arg in (*FLAGS, f"--window-size={window}", f"--user-data-dir={profile}"):
        options.add_argument(arg)
    if downloads is not None:
        options.add_experimental_option(
            "prefs", {"download.default_directory": str(downloads), "download.prompt_for_download": False}
        )
    # An explicit driver path: Selenium Manager never looks for (or downloads) a browser or driver.
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
