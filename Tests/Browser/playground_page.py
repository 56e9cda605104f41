"""Drives `policy serve`'s /playground in headless Chromium (Debian's package, no browser download).

usage: playground_page.py BASE_URL SCREENSHOT.png

Loads the playground of a server serving research-crawler, clicks the free tier's add_source cell at the
sources limit, checks the editor holds that cell's request and the live explanation shows the deny with rule
locations, edits the request to the team tier and checks the decision turns to allow, then types broken JSON
and checks the server's problem (code and byte offset) is shown. Exits 0 when every check holds.
"""
import json
import os
import sys
import time

from browser import check, chromium
from selenium.webdriver.common.by import By


def wait_for(predicate, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    return predicate()


def set_editor(driver, text):
    editor = driver.find_element(By.ID, "editor")
    driver.execute_script("arguments[0].value = arguments[1];", editor, text)
    # A real keystroke, so the page's own input handler runs.
    editor.send_keys(" ")


def main(base, screenshot):
    driver = chromium(1000)
    try:
        driver.get(base.rstrip("/") + "/playground")
        status = json.loads(driver.execute_script(
            "var x = new XMLHttpRequest(); x.open('GET', '/v1/policy', false); x.send(); return x.responseText;"))
        check(driver.find_element(By.ID, "policy-hash").text == status["active"]["hash"],
              "the page shows the active policy's hash")
        check(driver.find_element(By.ID, "policy-loaded").text == status["active"]["loadedAt"],
              "and the time it was loaded")

        app = driver.find_element(By.CSS_SELECTOR, 'section[data-table="0"]')
        headers = app.find_elements(By.CSS_SELECTOR, "thead th")
        limit = [i for i, th in enumerate(headers) if th.text.startswith("add_source") and "≥ 50" in th.text]
        check(len(limit) == 1, "one add_source column at usage.sources ≥ 50")
        free = [r for r in app.find_elements(By.CSS_SELECTOR, "tbody tr") if "|free|" in r.get_attribute("data-subjects")]
        check(len(free) == 1, "one row holds the free tier")
        free[0].find_elements(By.CSS_SELECTOR, "th, td")[limit[0]].find_element(By.TAG_NAME, "a").click()

        request = json.loads(wait_for(lambda: driver.find_element(By.ID, "editor").get_attribute("value")))
        check(request["action"] == "add_source" and request["resource"]["usage"]["sources"] >= 50,
              "the editor holds the cell's request (add_source at the limit)")
        result = driver.find_element(By.ID, "result")
        check(wait_for(lambda: "limit_exceeded" in result.text), "the live explanation shows deny (limit_exceeded)")
        check("limit of 50 sources" in result.text, "with the policy's message")
        steps = driver.find_elements(By.CSS_SELECTOR, "#trace li")
        check(any("policies/" in s.text or ".yaml:" in s.text for s in steps), "the trace shows rule locations")

        # The cell's subject may be the signed-out member of its row; a signed-in team subscriber lifts the limit.
        request["subject"] = {"id": "playground-user", "tier": "team"}
        set_editor(driver, json.dumps(request, indent=2))
        check(wait_for(lambda: result.text.startswith("allow")),
              "editing the tier to team turns the decision to allow (shown: " + result.text + ")")

        set_editor(driver, '{"action": "add_source", "action": "x"}')
        check(wait_for(lambda: "invalid_json" in result.text), "broken JSON shows the server's problem")
        check("at byte" in result.text and "duplicate" in result.text, "with its detail and byte offset")

        set_editor(driver, json.dumps(request, indent=2))
        wait_for(lambda: result.text.startswith("allow"))
        driver.save_screenshot(screenshot)
        check(os.path.exists(screenshot), "screenshot saved to " + screenshot)
    finally:
        driver.quit()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
