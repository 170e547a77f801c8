#!/usr/bin/python3
"""Accessibility findings for an HTML document read from stdin, printed as
one JSON array. The document is the DOM chromium rendered (--dump-dom).

Rules (WCAG techniques, the automatable subset): html-lang, document-title,
image-alt, input-label, link-name, button-name, heading-order.
"""
import json
import sys
from html.parser import HTMLParser

LABELLED_INPUTS = {"text", "email", "password", "search", "tel", "url", "number", ""}


class Scan(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.findings = []
        self.line = 0
        self.has_lang = False
        self.title = ""
        self.in_title = False
        self.label_for = set()
        self.inputs = []
        self.open_link = None
        self.open_button = None
        self.last_heading = 0

    def add(self, rule, message, snippet):
        self.findings.append(
            {"rule": rule, "severity": "serious" if rule != "heading-order" else "moderate",
             "message": message, "element": snippet, "line": self.getpos()[0]}
        )

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        snippet = self.get_starttag_text() or f"<{tag}>"
        if tag == "html" and a.get("lang"):
            self.has_lang = True
        elif tag == "title":
            self.in_title = True
        elif tag == "img" and "alt" not in a and a.get("role") != "presentation":
            self.add("image-alt", "image has no alt text", snippet)
        elif tag == "label" and a.get("for"):
            self.label_for.add(a["for"])
        elif tag == "input" and a.get("type", "") in LABELLED_INPUTS:
            self.inputs.append((a, snippet, self.getpos()[0]))
        elif tag == "a" and "href" in a:
            self.open_link = [snippet, bool(a.get("aria-label") or a.get("title")), self.getpos()[0]]
        elif tag == "button":
            self.open_button = [snippet, bool(a.get("aria-label") or a.get("title")), self.getpos()[0]]
        elif tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            level = int(tag[1])
            if self.last_heading and level > self.last_heading + 1:
                self.add("heading-order", f"h{level} follows h{self.last_heading}", snippet)
            self.last_heading = level
        if tag == "img" and self.open_link is not None and a.get("alt"):
            self.open_link[1] = True

    def handle_endtag(self, tag):
        if tag == "title":
            self.in_title = False
        elif tag == "a" and self.open_link is not None:
            if not self.open_link[1]:
                self.findings.append({"rule": "link-name", "severity": "serious",
                                      "message": "link has no discernible text",
                                      "element": self.open_link[0], "line": self.open_link[2]})
            self.open_link = None
        elif tag == "button" and self.open_button is not None:
            if not self.open_button[1]:
                self.findings.append({"rule": "button-name", "severity": "serious",
                                      "message": "button has no discernible text",
                                      "element": self.open_button[0], "line": self.open_button[2]})
            self.open_button = None

    def handle_data(self, data):
        if self.in_title:
            self.title += data
        if data.strip():
            if self.open_link is not None:
                self.open_link[1] = True
            if self.open_button is not None:
                self.open_button[1] = True

    def finish(self):
        if not self.has_lang:
            self.findings.insert(0, {"rule": "html-lang", "severity": "serious",
                                     "message": "<html> has no lang attribute",
                                     "element": "<html>", "line": 1})
        if not self.title.strip():
            self.findings.insert(0, {"rule": "document-title", "severity": "serious",
                                     "message": "document has no title", "element": "<title>",
                                     "line": 1})
        for a, snippet, line in self.inputs:
            if not (a.get("aria-label") or a.get("title") or a.get("id") in self.label_for):
                self.findings.append({"rule": "input-label", "severity": "serious",
                                      "message": "form field has no label", "element": snippet,
                                      "line": line})
        return self.findings


scan = Scan()
scan.feed(sys.stdin.read())
print(json.dumps(scan.finish()))
