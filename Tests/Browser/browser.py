"""What the browser scripts share: a headless Chromium from Debian's package (no browser download) and checks."""
import os
import sys

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")


def check(condition, message):
    """Prints `ok: message`, or `FAILED: message` and exits 1."""
    if not condition:
        print("FAILED: " + message)
        sys.exit(1)
    print("ok: " + message)


def chromium(height=900):
    """A headless Chromium driver with a 1400-pixel-wide window and a two-minute page-load bound."""
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1400,%d" % height, "--disable-background-networking", "--no-first-run"]:
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(120)
    driver.implicitly_wait(0)
    return driver
