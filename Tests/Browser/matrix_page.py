"""Drives the HTML decision matrix in headless Chromium (Debian's package, no browser download).

usage: matrix_page.py PAGE.html SCREENSHOT.png

Loads the page, clicks the free tier's add_source cell at the sources limit, checks the panel's decision and
request, filters by action and by subject class, checks what stays visible, and saves a screenshot.
Exits 0 when every check holds; prints the failed check and exits 1 otherwise.
"""
import json
import os
import sys

from browser import check, chromium
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select


def visible(elements):
    return [e for e in elements if e.is_displayed()]


def main(page, screenshot):
    driver = chromium(900)
    try:
        driver.get("file://" + os.path.abspath(page))
        check(driver.find_element(By.TAG_NAME, "h1").text == "Decision matrix: research-crawler", "the page title")
        app = driver.find_element(By.CSS_SELECTOR, 'section[data-table="0"]')
        check(app.find_element(By.TAG_NAME, "h2").text == "app", "the first table is the app type")

        # The free tier's row and the add_source column at the sources limit.
        headers = app.find_elements(By.CSS_SELECTOR, "thead th")
        limit = [i for i, th in enumerate(headers) if th.text.startswith("add_source") and "≥ 50" in th.text]
        check(len(limit) == 1, "one add_source column at usage.sources ≥ 50")
        rows = app.find_elements(By.CSS_SELECTOR, "tbody tr")
        free = [r for r in rows if "|free|" in r.get_attribute("data-subjects")]
        check(len(free) == 1, "one row holds the free tier")
        cell = free[0].find_elements(By.CSS_SELECTOR, "th, td")[limit[0]]
        check(cell.text == "✗ limit_exceeded", "the free row's cell at the limit reads ✗ limit_exceeded")
        check("limit of 50 sources" in cell.find_element(By.TAG_NAME, "a").get_attribute("title"),
              "its hover text is the deny message")
        cell.find_element(By.TAG_NAME, "a").click()

        panel = driver.find_element(By.ID, "panel")
        check(panel.is_displayed(), "clicking a cell opens the panel")
        decision = driver.find_element(By.ID, "panel-decision").text
        check(decision.startswith("deny (limit_exceeded): You've reached the limit of 50 sources."),
              "the panel shows the decision and message: " + decision)
        request = json.loads(driver.find_element(By.ID, "panel-request").text)
        check(request["action"] == "add_source" and request["resource"]["usage"]["sources"] >= 50,
              "the panel shows the cell's request JSON")
        link = driver.find_element(By.ID, "panel-link").get_attribute("href")
        check(link.startswith("data:application/json"), "the panel links the request as a data: URL")
        driver.save_screenshot(screenshot)

        Select(driver.find_element(By.ID, "filter-action")).select_by_value("add_source")
        shown = visible(app.find_elements(By.CSS_SELECTOR, "thead th[data-action]"))
        check(len(shown) == 2 and all(th.text.startswith("add_source") for th in shown),
              "the action filter leaves the two add_source columns")
        project = driver.find_element(By.CSS_SELECTOR, 'section[data-table="1"]')
        check(not visible(project.find_elements(By.CSS_SELECTOR, "thead th[data-action]")),
              "the action filter hides the project actions")

        Select(driver.find_element(By.ID, "filter-subject")).select_by_value("team")
        shown = visible(app.find_elements(By.CSS_SELECTOR, "tbody tr"))
        check(len(shown) == 1 and "team" in shown[0].find_element(By.TAG_NAME, "th").text,
              "the subject filter leaves the team row")
        check([td.text for td in visible(shown[0].find_elements(By.TAG_NAME, "td"))] == ["✓ allow", "✓ allow"],
              "team may add sources below and at the limit")
        Select(driver.find_element(By.ID, "filter-action")).select_by_value("")
        Select(driver.find_element(By.ID, "filter-subject")).select_by_value("")
        check(len(visible(app.find_elements(By.CSS_SELECTOR, "tbody tr"))) == len(rows), "clearing the filters shows every row")
    finally:
        driver.quit()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
