"""report.html in a real browser (ctest test_browser_report, label browser): headless Chromium renders a report of
the analytic claims with a fault planted in the answer key's ledger (so that some claims fail), runs the page's
script, and the DOM it leaves is read back:
  - the summary's badges count what report.json counts;
  - "Needs attention" lists exactly the failed, errored and unexpectedly passed claims, each linked to its row;
  - every claim has a row whose id is the claim's id (an anchor), with links to its expected file and check;
  - the filter from the address (#status=fail, ?chapter=ch04&kind=analytic) hides every other claim, and says how
    many it shows.
Exit 77 (skipped) where no Chromium is installed (.ci/run installs it: ci/install-deps.sh browser).

usage: browser_report.py CLAIMCHECK ROOT
"""
import html.parser
import json
import os
import shutil
import subprocess
import sys
import tempfile

claimcheck, root = sys.argv[1], sys.argv[2]
browser = next((b for b in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable") if shutil.which(b)), None)
if browser is None:
    print("SKIP: no Chromium on this machine (Debian: apt-get install chromium; ci/install-deps.sh browser)")
    sys.exit(77)


class Dom(html.parser.HTMLParser):
    """The elements that matter, with their attributes and the text inside them."""

    def __init__(self):
        super().__init__()
        self.elements = []  # (tag, attrs, hidden-by-an-ancestor)
        self.stack = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        hidden = any(h for _, _, h in self.stack) or "hidden" in a
        self.elements.append((tag, a, hidden))
        if tag not in ("br", "img", "meta", "link", "input", "hr", "source"):
            self.stack.append((tag, a, hidden))

    def handle_endtag(self, tag):
        while self.stack:
            t, _, _ = self.stack.pop()
            if t == tag:
                break

    def find(self, tag, **want):
        """(attributes, hidden) of each `tag` element whose attributes have the values in `want`."""
        return [(a, hidden) for t, a, hidden in self.elements
                if t == tag and all(a.get(k) == v for k, v in want.items())]


def render(url, tmp):
    """The DOM after the page's script ran."""
    out = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          f"--user-data-dir={tmp}/profile", "--virtual-time-budget=3000", "--dump-dom", url],
                         capture_output=True, text=True, timeout=120)
    if out.returncode != 0 or "<html" not in out.stdout:
        sys.exit(f"FAIL: {browser} did not render {url} (exit {out.returncode}): {out.stderr[-500:]}")
    d = Dom()
    d.feed(out.stdout)
    return d


failures = []


def expect(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


with tempfile.TemporaryDirectory() as tmp:
    report = os.path.join(tmp, "report")
    env = dict(os.environ, CLAIMCHECK_FAULT="ledger_lora_qv_only")
    run = subprocess.run([claimcheck, "run", "--label", "analytic", "--report", report, "--quiet", "--root", root],
                         env=env, capture_output=True, text=True, timeout=600)
    if run.returncode not in (0, 1):
        sys.exit(f"FAIL: claimcheck run exited {run.returncode}: {run.stderr[-800:]}")
    doc = json.load(open(os.path.join(report, "report.json")))
    claims = {c["id"]: c for c in doc["claims"]}
    summary = doc["summary"]
    bad = sorted(i for i, c in claims.items() if c["status"] in ("fail", "error", "xpass"))
    expect(len(bad) >= 2, f"the planted ledger fault fails some claims ({', '.join(bad)})")
    page = "file://" + os.path.join(report, "report.html")

    dom = render(page, tmp)
    counts = {a.get("data-status"): int(a.get("data-count")) for a, _ in dom.find("a") if a.get("data-count")}
    by_status = summary.get("by_status", summary)
    for k in ("pass", "fail", "xfail", "xpass", "error"):
        expect(counts.get(k) == by_status.get(k), f"badge {k}: {counts.get(k)} as report.json says ({by_status.get(k)})")
    listed = sorted(a["data-id"] for a, _ in dom.find("li") if "data-id" in a)
    expect(listed == bad, f"needs attention lists {listed}, report.json's failures are {bad}")
    rows = {a["id"]: (a, hidden) for a, hidden in dom.find("tbody") if "claim" in (a.get("class") or "").split()}
    expect(sorted(rows) == sorted(claims), f"a row per claim, its id the claim's id ({len(rows)} rows, {len(claims)} claims)")
    expect(all(not h for _, h in rows.values()), "unfiltered: no claim hidden")
    links = [a.get("href", "") for a, _ in dom.find("a")]
    expect(any(h.endswith("expected/ch04/lora_gb.json") for h in links), "a link to an expected file (ch04/lora_gb.json)")
    expect(any("checks/ch04/" in h and h.endswith(".cpp") for h in links), "a link to a check's source")
    for i in bad:
        expect(f"#{i}" in links, f"needs attention links to #{i}")

    dom = render(page + "#status=fail", tmp)
    rows = {a["id"]: hidden for a, hidden in dom.find("tbody") if "claim" in (a.get("class") or "").split()}
    shown = sorted(i for i, h in rows.items() if not h)
    want = sorted(i for i, c in claims.items() if c["status"] == "fail")
    expect(shown == want, f"#status=fail shows {shown}, the failed claims are {want}")
    count = [a.get("data-shown") for a, _ in dom.find("span", id="shown")]
    expect(count == [str(len(want))], f"the filter says it shows {count}, {len(want)} expected")

    dom = render(page + "?chapter=ch04&kind=analytic", tmp)
    rows = {a["id"]: hidden for a, hidden in dom.find("tbody") if "claim" in (a.get("class") or "").split()}
    shown = sorted(i for i, h in rows.items() if not h)
    want = sorted(i for i, c in claims.items() if c["chapter"] == "ch04" and "analytic" in c["kind"])
    expect(shown == want and len(want) > 0, f"?chapter=ch04&kind=analytic shows {len(shown)} claims, {len(want)} expected")
    sections = [(a["id"], h) for a, h in dom.find("section") if a.get("id", "").startswith("chapter-")]
    expect([s for s, h in sections if not h] == ["chapter-ch04"], f"only ch04's section stays visible ({sections})")

if failures:
    sys.exit(f"{len(failures)} check(s) of report.html failed")
print("report.html holds in Chromium")
