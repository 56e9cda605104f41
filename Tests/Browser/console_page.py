"""Drives `policy serve --console`'s /console in headless Chromium (Debian's package, no browser download).

usage: console_page.py BASE_URL FIXTURE.json SCREENSHOT_DIR

FIXTURE.json (written by ConsoleBrowserTests) holds the operator credential, the user the test made through the
public API (username, id, two access tokens), the hostile space names it created, the device names its two sign-ins
declared (one hostile) and the purchase's original transaction id. The script signs in as the operator, finds the user, checks the tier the purchase gave, explains a
denial, grants a role and sees the decision change, ends one session and checks the next decision with that token
is refused, checks hostile names render as text, and that the credential is in no URL, cookie or page source.
Screenshots of the main pages go to SCREENSHOT_DIR. Exits 0 when every check holds.
"""
import json
import os
import sys
import time
import urllib.request

from browser import check, chromium
from selenium.webdriver.common.by import By


def wait_for(predicate, seconds=90):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            value = predicate()
        except Exception:
            value = None
        if value:
            return value
        time.sleep(0.1)
    return predicate()


def decide(base, token, action, resource_type):
    request = urllib.request.Request(
        base.rstrip("/") + "/v1/decide", method="POST",
        data=json.dumps({"action": action, "resource": {"type": resource_type}}).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer " + token})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def operator_get(base, secret, path):
    request = urllib.request.Request(base.rstrip("/") + path, headers={"Authorization": "Bearer " + secret})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def text(driver, element_id):
    return driver.find_element(By.ID, element_id).text


def confirm(driver):
    wait_for(lambda: driver.find_element(By.ID, "confirm").is_displayed())
    driver.find_element(By.ID, "confirm-yes").click()


def status_is(driver, words):
    return wait_for(lambda: words in text(driver, "status"))


def explain(driver, action, resource_type):
    for element_id, value in [("explain-action", action), ("explain-type", resource_type)]:
        field = driver.find_element(By.ID, element_id)
        field.clear()
        field.send_keys(value)
    # The last answer is cleared first, so the one waited for is this question's.
    driver.execute_script("var r = document.getElementById('explain-result'); r.removeAttribute('data-reason');"
                          " r.removeAttribute('data-decision'); r.textContent = '';")
    driver.find_element(By.ID, "explain").click()
    result = driver.find_element(By.ID, "explain-result")
    wait_for(lambda: result.get_attribute("data-reason"))
    return result


def shoot(driver, directory, name):
    if not directory:
        return
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, name)
    driver.save_screenshot(path)
    check(os.path.exists(path), "screenshot " + name)


def main(base, fixture_path, shots):
    with open(fixture_path) as f:
        fixture = json.load(f)
    secret = fixture["operatorToken"]
    driver = chromium(1100)
    try:
        driver.get(base.rstrip("/") + "/console")
        check(wait_for(lambda: driver.find_element(By.ID, "signin").is_displayed()), "the sign-in form shows first")
        shoot(driver, shots, "console-signin.png")

        # A wrong credential is refused and not kept.
        driver.find_element(By.ID, "token").send_keys("not-the-operator-credential")
        driver.find_element(By.ID, "sign-in").click()
        check(status_is(driver, "refused"), "a wrong credential is refused")
        check(driver.execute_script("return sessionStorage.getItem('gatehouse.operator');") is None, "and not kept")

        driver.find_element(By.ID, "token").send_keys(secret)
        driver.find_element(By.ID, "sign-in").click()
        check(wait_for(lambda: driver.find_element(By.ID, "users").is_displayed()), "signing in shows the user search")
        check(secret not in driver.current_url, "the credential is not in the URL")
        check(secret not in driver.page_source, "the credential is not in the page source")
        check(driver.execute_script("return document.cookie;") == "", "no cookie is set")
        check(driver.execute_script("return sessionStorage.getItem('gatehouse.operator');") == secret,
              "the credential is kept in the tab's session storage")
        check(driver.find_element(By.ID, "token").get_attribute("value") == "", "the credential field is emptied")

        # Find the user the test made through the public API.
        driver.find_element(By.ID, "q").send_keys(fixture["username"])
        driver.find_element(By.ID, "find").click()
        check(wait_for(lambda: text(driver, "user-title") != ""), "the user's page opens")
        check(fixture["userId"] in text(driver, "user-facts"), "it is the user made through the public API")
        tier = driver.find_element(By.ID, "tier")
        check(tier.get_attribute("data-tier") == "pro" and tier.get_attribute("data-source") == "purchase",
              "the tier the purchase gave: pro, from a purchase (shown: " + tier.text + ")")
        check(fixture["originalTransactionId"] in text(driver, "transactions"), "the App Store transaction is listed")
        check("app_store_purchase" in text(driver, "store-events") and "applied:pro" in text(driver, "store-events"),
              "and the purchase with its outcome (applied:pro)")
        sessions = driver.find_elements(By.CSS_SELECTOR, "#sessions button[data-session]")
        check(len(sessions) == 2, "two live sessions, each with an end button")
        listed = text(driver, "sessions")
        check(fixture["device"] in listed, "each session shows its device: " + repr(listed))
        check(fixture["hostileDevice"] in listed, "a hostile device name is shown as its text")
        check(len(driver.find_elements(By.CSS_SELECTOR, "#sessions img, #sessions script")) == 0
              and driver.execute_script("return window.__pwned === undefined;"), "no element or script was made from a device name")

        # Hostile names render as text, never markup.
        names = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#spaces .space-name")]
        check(sorted(names) == sorted(fixture["spaceNames"]), "hostile space names are shown as their text: " + repr(names))
        check(len(driver.find_elements(By.CSS_SELECTOR, "#spaces img, #spaces script, #spaces b, #user img")) == 0,
              "no element was made from a name")
        check(driver.execute_script("return window.__pwned === undefined;"), "no script from a name ran")
        shoot(driver, shots, "console-user.png")

        # Why was this denied: the role-gated action, before the grant.
        result = explain(driver, "view_tickets", "helpdesk")
        check(result.get_attribute("data-decision") == "deny" and result.get_attribute("data-reason") == "role_required",
              "explaining view_tickets shows the denial: role_required (shown: " + result.text + ")")
        check(any("helpdesk" in s.text or ".yaml" in s.text for s in driver.find_elements(By.CSS_SELECTOR, "#explain-trace li")),
              "with the trace and rule locations")
        shoot(driver, shots, "console-explain.png")

        # Grant the role (behind a confirmation) and see the decision change.
        driver.find_element(By.ID, "role-support").click()
        driver.find_element(By.ID, "save-roles").click()
        confirm(driver)
        check(status_is(driver, "roles saved"), "the role is saved after the confirmation")
        check(driver.find_element(By.ID, "role-support").is_selected(), "and shown as held")
        result = explain(driver, "view_tickets", "helpdesk")
        check(result.get_attribute("data-decision") == "allow", "the same question is now allowed (shown: " + result.text + ")")
        check(decide(base, fixture["tokens"][0], "view_tickets", "helpdesk")["decision"] == "allow",
              "and the user's own decision changed")

        # End one session: the next decision with its token is refused; the other session's still works. (The API
        # does not tell a client its session id, so the token is known by being the one of the two that is refused.)
        before = [decide(base, token, "view_tickets", "helpdesk")["decision"] for token in fixture["tokens"]]
        check(before == ["allow", "allow"], "both sessions decide before")
        sessions = driver.find_elements(By.CSS_SELECTOR, "#sessions button[data-session]")
        ended = sessions[0].get_attribute("data-session")
        sessions[0].click()
        confirm(driver)
        check(status_is(driver, "session ended"), "the session is ended after the confirmation")
        after = [decide(base, token, "view_tickets", "helpdesk")["reason"] for token in fixture["tokens"]]
        check(sorted(after) == ["allowed", "unauthenticated"],
              "the next decision with the ended session's token is refused, the other session's allowed: %r" % after)
        row = driver.find_element(By.CSS_SELECTOR, '#sessions tr[data-session-row="%s"]' % ended)
        check("ended (operator)" in row.text, "the ended session shows as ended by the operator")
        live = driver.find_elements(By.CSS_SELECTOR, "#sessions button[data-session]")
        check(len(live) == 1, "one live session is left on the page")

        # A decision record names the user by a keyed pseudonym (u-...), as the operator's decision list shows it;
        # the search box finds the user by it.
        records = wait_for(lambda: [d for d in operator_get(base, secret, "/v1/operator/decisions?user=" + fixture["userId"])["decisions"]
                                    if d.get("subject")])
        pseudonym = records[0]["subject"]
        check(pseudonym.startswith("u-"), "a decision record names its subject by a keyed pseudonym")
        driver.find_element(By.ID, "q").clear()
        driver.find_element(By.ID, "q").send_keys(pseudonym)
        driver.find_element(By.ID, "find").click()
        check(wait_for(lambda: "decisionPseudonym" in text(driver, "results") and fixture["userId"] in text(driver, "results")),
              "a decision record's pseudonym finds the user")

        # A user signed in with Apple under a hostile display name: found by the Apple subject, the name shown as text.
        driver.find_element(By.ID, "q").clear()
        driver.find_element(By.ID, "q").send_keys(fixture["appleSubject"])
        driver.find_element(By.ID, "find").click()
        wanted = fixture["hostileDisplayName"]
        check(wait_for(lambda: text(driver, "user-title") == wanted), "a hostile display name is shown as its text")
        check("appleSubject" in text(driver, "results") and wanted in text(driver, "results"),
              "found by the Apple subject, the name in the result as text")
        check(fixture["appleSubject"] in text(driver, "credentials"), "the Apple identity is listed among the credentials")
        check(len(driver.find_elements(By.CSS_SELECTOR, "#user img, #user script, #results img, #results script")) == 0
              and driver.execute_script("return window.__pwned === undefined;"), "no element or script was made from the name")

        # The policy page.
        driver.find_element(By.ID, "nav-policy").click()
        check(wait_for(lambda: driver.find_element(By.ID, "policy").is_displayed()), "the policy page opens")
        check(fixture["policyHash"] in text(driver, "policy-facts"), "it shows the active version")
        check(wait_for(lambda: "view_tickets" in text(driver, "policy-counts")), "and the decision counts per action and reason")
        shoot(driver, shots, "console-policy.png")

        # Readable on a phone: the user page at 390 pixels wide has no horizontal scroll of the page itself.
        driver.set_window_size(390, 844)
        driver.find_element(By.ID, "nav-users").click()
        width, visible = driver.execute_script(
            "return [document.documentElement.scrollWidth, document.documentElement.clientWidth];")
        check(width <= visible, "at a phone's width the page does not scroll sideways (%d of %d pixels)" % (width, visible))
        shoot(driver, shots, "console-phone.png")

        check(secret not in driver.page_source, "the credential is still in no page source")
        driver.find_element(By.ID, "sign-out").click()
        check(driver.execute_script("return sessionStorage.getItem('gatehouse.operator');") is None, "signing out forgets it")
    finally:
        driver.quit()


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__)
        sys.exit(64)
    main(sys.argv[1], sys.argv[2], sys.argv[3])
