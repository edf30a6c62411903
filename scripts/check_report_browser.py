#!/usr/bin/env python3
"""Renders the report of a tiny run in headless Chromium (used by ctest).

  scripts/check_report_browser.py BUILD_DIR [--keep DIR]

Runs a small experiment on the tests' random-weight model (a few seconds),
then checks report.html as a browser sees it:
  - every <img src> names a file in the run folder that is a PNG or SVG;
  - every link into predictions.html names an anchor that page has;
  - Chromium loads report.html (in an iframe of a checker page, file access
    allowed) with every image decoded (complete, naturalWidth > 0), and a
    configuration label written as HTML stays text (no element from it);
  - a full-page screenshot is produced at the requested size.
Exit 0 when all hold, 1 with a line per failure, 77 (ctest's skip) when
Chromium is not installed: scripts/setup.sh installs Debian's `chromium`.
--keep DIR copies the run folder and the screenshot there.
"""
import html.parser
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import urllib.parse

# A label as a colleague might write it: it must reach the page as text.
HOSTILE_LABEL = "<b id=\"injected\">win & 64</b>"


class Links(html.parser.HTMLParser):
    """The img sources, hrefs and element ids of one page."""

    def __init__(self):
        super().__init__()
        self.images, self.hrefs, self.ids = [], [], set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "img":
            self.images.append(a.get("src", ""))
        if tag == "a" and "href" in a:
            self.hrefs.append(a["href"])
        if "id" in a:
            self.ids.add(a["id"])


def parse(path):
    p = Links()
    with open(path, encoding="utf-8") as f:
        p.feed(f.read())
    return p


def chromium_command():
    for name in ("chromium", "chromium-browser"):
        if shutil.which(name):
            return name
    return None


def browser(chromium, profile, *args):
    cmd = [chromium, "--headless", "--disable-gpu", "--hide-scrollbars",
           "--user-data-dir=" + profile, "--virtual-time-budget=10000", *args]
    if os.geteuid() == 0:
        cmd.insert(1, "--no-sandbox")  # Chromium refuses root without it
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    return struct.unpack(">II", head[16:24])


def tiny_run(kvbench, tmp):
    model = os.path.join(tmp, "tiny.gguf")
    subprocess.run([kvbench, "tiny-model", "-o", model], check=True, capture_output=True)
    experiment = {
        "name": "browser",
        "description": "The report as a browser shows it.",
        "model": model,
        "threads": 2,
        "tasks": [{"task": "passkey", "lengths": [128, 192], "depths": [0.25, 0.75]}],
        "policies": ["full", {"spec": "window:budget=64", "label": HOSTILE_LABEL},
                     {"spec": "streaming:budget=64", "label": "streaming 64"}],
        "decoding": {"chunk": 64, "max_new_tokens": 2},
    }
    path = os.path.join(tmp, "browser.json")
    with open(path, "w") as f:
        json.dump(experiment, f)
    out = os.path.join(tmp, "out")
    r = subprocess.run([kvbench, "run", path, "-q", "--out", out], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("FAIL: kvbench run: " + r.stderr.strip())
    (run,) = os.listdir(out)
    return os.path.join(out, run)


def main():
    if len(sys.argv) not in (2, 4) or (len(sys.argv) == 4 and sys.argv[2] != "--keep"):
        sys.exit(__doc__)
    chromium = chromium_command()
    if not chromium:
        print("SKIP: chromium is not installed (scripts/setup.sh installs Debian's chromium); "
              "the report was not rendered in a browser")
        return 77
    kvbench = os.path.join(os.path.abspath(sys.argv[1]), "kvbench")
    failures = []
    with tempfile.TemporaryDirectory(prefix="kvbench-browser-") as tmp:
        run = tiny_run(kvbench, tmp)
        report = os.path.join(run, "report.html")
        page = parse(report)
        predictions = parse(os.path.join(run, "predictions.html"))

        # Images: the files exist and are what their names say.
        if len(page.images) < 4:
            failures.append(f"{len(page.images)} images in report.html, expected at least 4")
        for src in page.images:
            path = os.path.join(run, urllib.parse.unquote(src))
            if not os.path.isfile(path) or os.path.getsize(path) == 0:
                failures.append(f"<img src={src!r}>: no such file in the run folder")
                continue
            with open(path, "rb") as f:
                head = f.read(512)
            if not (head.startswith(b"\x89PNG") or b"<svg" in head):
                failures.append(f"<img src={src!r}>: neither PNG nor SVG")

        # Links to predictions: the anchor exists.
        cell_links = 0
        for href in page.hrefs:
            target, _, anchor = href.partition("#")
            if target == "predictions.html" and anchor:
                cell_links += anchor.startswith("cell-")
                if anchor not in predictions.ids:
                    failures.append(f"<a href={href!r}>: predictions.html has no such anchor")
        cells = len(os.listdir(os.path.join(run, "cells")))
        if cell_links != cells:
            failures.append(f"{cell_links} links to cells' predictions, expected {cells}")

        # The browser: every image decoded, the label still text.
        checker = os.path.join(tmp, "check.html")
        with open(checker, "w") as f:
            f.write("""<!doctype html><html><body><pre id="out">not loaded</pre>
<iframe id="f" src="%s" width="1400" height="900"></iframe><script>
document.getElementById('f').addEventListener('load', () => {
  const d = document.getElementById('f').contentDocument;
  const imgs = Array.from(d.images);
  document.getElementById('out').textContent = 'RESULT ' + JSON.stringify({
    images: imgs.length,
    broken: imgs.filter(i => !i.complete || i.naturalWidth === 0).map(i => i.getAttribute('src')),
    injected: d.getElementById('injected') !== null,
    summary: d.querySelectorAll('ul.summary li').length});
});
</script></body></html>""" % ("file://" + urllib.parse.quote(report)))
        r = browser(chromium, os.path.join(tmp, "profile"), "--allow-file-access-from-files",
                    "--dump-dom", "file://" + urllib.parse.quote(checker))
        line = next((l for l in r.stdout.splitlines() if "RESULT {" in l), None)
        if line is None:
            failures.append("chromium did not load the report: " + (r.stderr.strip()[-300:]))
        else:
            text = line[line.index("RESULT ") + 7:].split("</pre>")[0]
            seen = json.loads(text.replace("&quot;", '"').replace("&amp;", "&"))
            if seen["images"] != len(page.images):
                failures.append(f"chromium saw {seen['images']} images, the file has "
                                f"{len(page.images)}")
            if seen["broken"]:
                failures.append(f"images chromium could not load: {seen['broken']}")
            if seen["injected"]:
                failures.append("a label written as HTML became an element")
            if seen["summary"] < 2:
                failures.append(f"{seen['summary']} summary sentences, expected at least 2")
            print(f"chromium: {seen['images']} images loaded, {seen['summary']} summary "
                  f"sentences, {cell_links} cell links")

        # A full-page screenshot.
        shot = os.path.join(tmp, "report.png")
        browser(chromium, os.path.join(tmp, "profile"), "--screenshot=" + shot,
                "--window-size=1400,3000", "file://" + urllib.parse.quote(report))
        size = png_size(shot) if os.path.isfile(shot) else None
        if size != (1400, 3000):
            failures.append(f"screenshot: expected a 1400x3000 PNG, got {size}")
        if len(sys.argv) == 4:
            keep = sys.argv[3]
            shutil.copytree(run, os.path.join(keep, "run"), dirs_exist_ok=True)
            if os.path.isfile(shot):
                shutil.copy(shot, keep)
    for f in failures:
        print("FAIL: " + f)
    if not failures:
        print("report.html renders in chromium with every image")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
