"""`claimcheck site HISTORY --out DIR` (issue 36, point 3): a history of two machines, one with two runs of two
commits (the later one with a claim gone from pass to fail and a benchmark faster beyond its noise), becomes the
site: the matrix of each machine's latest run (index.html, matrix.json, matrix.md) with a link to each machine's
timelines, a page per machine with a timeline per claim and per benchmark whose moved runs are ringed, and site.json.
Every link is relative and lands on a file. Bad input (no folder, a folder without reports, a report that is not
one, a truncated one) gets one line naming the file, exit 2, and leaves the previous site whole.
--browser: the site in headless Chromium (a timeline's points, a cell's link, the matrix's filter from the address);
exit 77 where there is no Chromium."""
import argparse
import atexit
import glob
import html.parser
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.parse

from clitest import Tally, run

p = argparse.ArgumentParser()
p.add_argument("--claimcheck", required=True)
p.add_argument("--root", required=True)
p.add_argument("--browser", action="store_true")
a = p.parse_args()
t = Tally()
cc = a.claimcheck


def history(folder):
    """Two machines from results/: the first as measured, then a later run of it (another commit, a day later) with
    ch06.decode_measured gone from pass to fail and the first benchmark 1.5x faster in every repetition."""
    reports = sorted(glob.glob(os.path.join(a.root, "results", "*", "report.json")))
    t.check(len(reports) >= 2, f"results/ holds two machines' reports ({len(reports)})")
    first = reports[0]
    os.makedirs(os.path.join(folder, "m1", "run1"))
    shutil.copy(first, os.path.join(folder, "m1", "run1", "report.json"))
    html_page = os.path.join(os.path.dirname(first), "report.html")
    if os.path.exists(html_page):
        shutil.copy(html_page, os.path.join(folder, "m1", "run1", "report.html"))
    r = json.load(open(first, encoding="utf-8"))
    r["records"]["commit"]["sha"] = "f" * 40
    r["generated_at"] = "2099-01-01T00:00:00Z"
    moved = None
    for c in r["claims"]:
        if c["status"] == "pass" and isinstance(c.get("measured"), dict) and isinstance(c["measured"].get("value"), float):
            c["status"], c["reason"], moved = "fail", "made to fail by the test", c["id"]
            break
    bench = None
    for b in r.get("benchmarks", []):
        if len(b.get("samples", [])) >= 9:
            b["samples"] = [x * 1.5 for x in b["samples"]]
            b["ratio"] *= 1.5
            bench = b["name"]
            break
    os.makedirs(os.path.join(folder, "m1", "run2"))
    json.dump(r, open(os.path.join(folder, "m1", "run2", "report.json"), "w", encoding="utf-8"))
    os.makedirs(os.path.join(folder, "m2", "run1"))
    shutil.copy(reports[1], os.path.join(folder, "m2", "run1", "report.json"))
    return moved, bench


class Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs, self.svgs, self.moved = [], 0, 0

    def handle_starttag(self, tag, attrs):
        d = dict(attrs)
        if tag == "a" and d.get("href"):
            self.hrefs.append(d["href"])
        if tag == "svg" and "timeline" in d.get("class", ""):
            self.svgs += 1
        if tag == "g" and "moved" in d.get("class", "").split():
            self.moved += 1


def links_of(path):
    p = Links()
    p.feed(open(path, encoding="utf-8").read())
    return p


tmp = tempfile.mkdtemp(prefix="cc_site_")
atexit.register(shutil.rmtree, tmp, True)
hist, out = os.path.join(tmp, "history"), os.path.join(tmp, "site")
moved_claim, moved_bench = history(hist)
r = run(cc, "site", hist, "--out", out)
t.check(r.returncode == 0 and "2 machine(s), 3 run(s)" in r.stdout, f"site: exit {r.returncode} {r.stdout} {r.stderr}")
for f in ("index.html", "matrix.json", "matrix.md", "site.json"):
    t.check(os.path.exists(os.path.join(out, f)), f"the site has {f}")
pages = sorted(glob.glob(os.path.join(out, "machines", "*.html")))
t.check(len(pages) == 2, f"a timeline page per machine: {pages}")
site = json.load(open(os.path.join(out, "site.json"), encoding="utf-8")) if os.path.exists(
    os.path.join(out, "site.json")) else {"machines": []}
t.check(site.get("schema") == "claimcheck.site/1", f"site.json's schema: {site.get('schema')}")
two = [m for m in site["machines"] if len(m["runs"]) == 2]
t.check(len(two) == 1, f"one machine with two runs: {[len(m['runs']) for m in site['machines']]}")
if two:
    m = two[0]
    t.check([r["commit"][:7] for r in m["runs"]][-1] == "fffffff", "the runs oldest first: the later commit last")
    pts = m["claims"].get(moved_claim, [])
    t.check(len(pts) == 2 and pts[0]["status"] == "pass" and pts[1]["status"] == "fail",
            f"{moved_claim}'s timeline: pass then fail ({pts})")
    t.check(len(pts) == 2 and "pass → fail" in pts[1]["moved"] and not pts[0]["moved"],
            f"the run where {moved_claim} moved is marked with why: {pts}")
    still = [cid for cid, ps in m["claims"].items() if cid != moved_claim and any(p["moved"] for p in ps)]
    t.check(not still, f"no other claim marked as moved: {still[:5]}")
    if moved_bench:
        bp = m["benchmarks"].get(moved_bench, [])
        t.check(len(bp) == 2 and bp[1]["moved"].startswith("faster beyond its noise (U test"),
                f"the benchmark 1.5x faster in every repetition is marked by the U test: {bp}")
        quiet = [n for n, ps in m["benchmarks"].items() if n != moved_bench and any(p["moved"] for p in ps)]
        t.check(not quiet, f"no benchmark left alone is marked: {quiet[:3]}")
# Every link of the site lands on a file (the anchors aside), from where it is written.
for page in [os.path.join(out, "index.html")] + pages:
    lp = links_of(page)
    broken = [h for h in lp.hrefs if not h.startswith("#") and not os.path.exists(
        os.path.normpath(os.path.join(os.path.dirname(page), urllib.parse.unquote(h.split("#")[0]))))]
    t.check(not broken, f"{os.path.relpath(page, out)}: every link lands on a file ({broken[:3]})")
index = links_of(os.path.join(out, "index.html"))
t.check(sum(h.startswith("machines/") for h in index.hrefs) == 2, "index.html links to each machine's timelines")
for page in pages:
    lp = links_of(page)
    t.check(lp.svgs >= 50, f"{os.path.basename(page)}: a timeline per claim ({lp.svgs})")
t.check(sum(links_of(p).moved for p in pages) == (1 + (moved_bench is not None)),
        f"the moved runs are ringed: {[links_of(p).moved for p in pages]}")

# Bad input: one line naming the file, exit 2, the site left as it was.
before = {f: open(f, "rb").read() for f in glob.glob(os.path.join(out, "**", "*"), recursive=True) if os.path.isfile(f)}


def bad(folder, *needles, what):
    r = run(cc, "site", folder, "--out", out)
    err = r.stderr.strip()
    t.check(r.returncode == 2 and err.count("\n") == 0 and all(n in err for n in needles),
            f"{what}: exit {r.returncode}, {err!r}")
    after = {f: open(f, "rb").read() for f in glob.glob(os.path.join(out, "**", "*"), recursive=True)
             if os.path.isfile(f)}
    t.check(after == before, f"{what}: the previous site is left whole")


bad(os.path.join(tmp, "nowhere"), "nowhere", "field '(folder)'", what="a history that does not exist")
empty = os.path.join(tmp, "empty")
os.makedirs(os.path.join(empty, "m1"))
bad(empty, "no report.json", what="a history without reports")
broken = os.path.join(tmp, "broken")
shutil.copytree(hist, broken)
victim = os.path.join(broken, "m2", "run1", "report.json")
open(victim, "w").write(open(os.path.join(hist, "m2", "run1", "report.json")).read()[:5000])
bad(broken, victim, what="a truncated report")
json.dump({"schema": "claimcheck.report/9", "claims": []}, open(victim, "w"))
bad(broken, victim, "schema", what="a report of an unknown schema")
json.dump({"hello": 1}, open(victim, "w"))
bad(broken, victim, what="a JSON file that is not a report")

if a.browser:
    browser = next((b for b in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
                    if shutil.which(b)), None)
    if browser is None:
        print("SKIP: no Chromium on this machine (Debian: apt-get install chromium; ci/install-deps.sh browser)")
        sys.exit(77)

    def dom(url):
        o = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                            f"--user-data-dir={tmp}/profile", "--virtual-time-budget=3000", "--dump-dom", url],
                           capture_output=True, text=True, timeout=120)
        t.check(o.returncode == 0 and "<html" in o.stdout, f"{browser} rendered {url}: exit {o.returncode}")
        return o.stdout

    class Rows(html.parser.HTMLParser):
        """The matrix's claim rows: their statuses and whether the filter hid them."""

        def __init__(self):
            super().__init__()
            self.rows = []

        def handle_starttag(self, tag, attrs):
            d = dict(attrs)
            if tag == "tr" and d.get("data-statuses") is not None:
                self.rows.append((d["data-statuses"], "hidden" in d))

    index_url = "file://" + os.path.join(out, "index.html")
    rows = Rows()
    rows.feed(dom(index_url + "#status=fail"))
    shown = [s for s, hidden in rows.rows if not hidden]
    t.check(rows.rows and shown and all("fail" in s for s in shown),
            f"the matrix's filter from the address (#status=fail) shows only those rows: {len(shown)} of {len(rows.rows)}")
    page = dom("file://" + pages[0])
    lp = Links()
    lp.feed(page)
    t.check(lp.svgs >= 50, f"the timelines render in the browser ({lp.svgs})")
t.finish()
