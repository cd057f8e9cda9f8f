"""What every page of the web face must pass on a phone and on a wide screen, as a
function any browser test imports: `layout_problems(page)` after it has loaded a page,
`nav_problems(page, url)` for the header's links, `column_problems(page)` for the
columns of its tables, `page_routes(app)` for the pages
there are (read from the app's routes, so a page added later is checked too), and
`screenshot(page, path)` for docs/ui.md.

The rule, at 390x844 and 1280x800 (`SIZES`): the document is no wider than the viewport
(no sideways scroll), no two visible interactive elements (a, button, input, select,
textarea, summary) are drawn over each other, and every header nav item is visible and
lands on its page when clicked. A page's own test adds that every column of its tables
is readable and on the screen (`column_problems`)."""

from __future__ import annotations

import re
from typing import Any

SIZES = ({"width": 390, "height": 844}, {"width": 1280, "height": 800})

# Each box of each visible interactive element: an inline link over two lines is two
# boxes, so its neighbours are compared with what is drawn, not with the union. An
# element inside another one (a link in a summary) is not compared with it.
_LAYOUT = """() => {
  const picked = [...document.querySelectorAll('a, button, input, select, textarea, summary')]
    .filter(e => e.type !== 'hidden' && e.checkVisibility({visibilityProperty: true}));
  const boxes = [];
  picked.forEach((e, i) => {
    for (const r of e.getClientRects()) {
      if (r.width >= 1 && r.height >= 1) boxes.push({i, r});
    }
  });
  const name = e => {
    const text = (e.innerText || e.value || e.getAttribute('aria-label') || e.name || '').trim();
    return e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + ' "' + text.slice(0, 30) + '"';
  };
  const over = [];
  for (let a = 0; a < boxes.length; a++) {
    for (let b = a + 1; b < boxes.length; b++) {
      const [p, q] = [boxes[a], boxes[b]];
      if (p.i === q.i) continue;
      const [x, y] = [picked[p.i], picked[q.i]];
      if (x.contains(y) || y.contains(x)) continue;
      const w = Math.min(p.r.right, q.r.right) - Math.max(p.r.left, q.r.left);
      const h = Math.min(p.r.bottom, q.r.bottom) - Math.max(p.r.top, q.r.top);
      if (w > 1 && h > 1) over.push(name(x) + ' over ' + name(y));
    }
  }
  return {
    scroll: document.documentElement.scrollWidth,
    viewport: window.innerWidth,
    past: [...document.querySelectorAll('body *')]
      .filter(e => e.getBoundingClientRect().right > window.innerWidth)
      .map(e => e.tagName.toLowerCase() + (e.className ? '.' + e.className : '') + ' '
        + Math.round(e.getBoundingClientRect().right)).slice(0, 6),
    over: [...new Set(over)],
  };
}"""


def layout_problems(page: Any) -> list[str]:
    """What is wrong with the page's layout once it has loaded, in words (empty: nothing).
    It waits for the load event: measured before the stylesheet is applied (a click that
    posts a form answers with a page whose elements are there before its styles are), any
    table is as wide as its text."""
    page.wait_for_load_state("load")
    found = page.evaluate(_LAYOUT)
    problems = []
    if found["scroll"] > found["viewport"]:
        problems.append(
            f"{page.url}: {found['scroll']} px wide in a {found['viewport']} px viewport"
            f" (past the edge: {', '.join(found['past'])})"
        )
    problems += [f"{page.url}: {pair}" for pair in found["over"]]
    return problems


# Each visible cell (th, td) of each visible table: a column is measured by its cells, so a
# row stacked as a card is measured field by field.
_COLUMNS = """([selector, narrowest]) => {
  const found = [];
  const name = c => c.tagName.toLowerCase() + (c.className ? '.' + c.className : '')
    + ' "' + c.innerText.trim().slice(0, 20) + '"';
  for (const table of document.querySelectorAll(selector)) {
    if (!table.checkVisibility({visibilityProperty: true})) continue;
    const where = 'table' + (table.id ? '#' + table.id : '.' + table.className);
    for (const cell of table.querySelectorAll('th, td')) {
      const box = cell.getBoundingClientRect();
      if (box.width < 1 || box.height < 1) continue;
      if (!cell.checkVisibility({visibilityProperty: true})) continue;
      const style = getComputedStyle(cell);
      const line = parseFloat(style.lineHeight) || 1.2 * parseFloat(style.fontSize);
      const text = document.createRange();
      text.selectNodeContents(cell);
      if (box.width < narrowest && text.getBoundingClientRect().height > 1.5 * line) {
        found.push(`${where}: ${name(cell)} is ${Math.round(box.width)} px wide, its text wrapped`);
      }
      if (box.right > window.innerWidth + 0.5) {
        found.push(`${where}: ${name(cell)} reaches ${Math.round(box.right)} px,`
          + ` past the ${window.innerWidth} px viewport`);
      }
      if (cell.scrollWidth > cell.clientWidth + 1) {
        found.push(`${where}: ${name(cell)} holds ${cell.scrollWidth} px in ${cell.clientWidth}`);
      }
    }
  }
  return [...new Set(found)];
}"""


def column_problems(page: Any, selector: str = "table", narrowest: int = 60) -> list[str]:
    """What is wrong with the columns of the page's visible tables (`selector`), in words
    (empty: nothing). Every visible cell (so every column, and every field of a row shown
    as a card) is at least `narrowest` px wide unless its text fits on one line in it (a
    rank of "3" needs no 60 px; a text one syllable a line does), and no cell reaches
    past the viewport's right edge or holds more than its width (a table that scrolls in
    its own box still hides its last columns)."""
    page.wait_for_load_state("load")
    found = page.evaluate(_COLUMNS, [selector, narrowest])
    return [f"{page.url}: {problem}" for problem in found]


def nav_problems(page: Any, url: str) -> list[str]:
    """Each header nav item of the page at `url`: visible, and clicking it lands on its page."""
    from playwright.sync_api import expect

    page.goto(url)
    links = page.locator("header nav a")
    targets = [links.nth(i).get_attribute("href") for i in range(links.count())]
    problems = [] if targets else [f"{url}: no nav items"]
    for i, href in enumerate(targets):
        page.goto(url)
        link = page.locator("header nav a").nth(i)
        if not link.is_visible():
            problems.append(f"{url}: nav item {href} is not visible")
            continue
        link.click()
        try:  # the page, with whatever query it adds (the audit's draw)
            expect(page).to_have_url(re.compile(re.escape(str(href)) + r"(\?.*)?$"))
        except AssertionError:
            problems.append(f"{url}: the nav item {href} led to {page.url}")
    return problems


def page_routes(app: Any) -> list[str]:
    """Every page of the web face a browser can GET without naming a path parameter: the
    app's GET routes under /ui, less the JSON it polls (/ui/api) and static files."""
    from fastapi.routing import iter_route_contexts

    paths = []
    for route in iter_route_contexts(app.router.routes):
        if route.path is None or "GET" not in (route.methods or ()):
            continue
        path = route.path
        if not path.startswith("/ui") or path.startswith(("/ui/api", "/ui/static")):
            continue
        if "{" in path:
            continue
        paths.append(path)
    return sorted(set(paths))


def screenshot(page: Any, path: Any, tallest: int = 2400) -> None:
    """The page as docs/ui.md shows it: from the top, up to `tallest` px of it, saved as
    a 128-colour PNG (a screen of text and flat colours loses nothing a reader sees, and
    the file is a fraction of the size)."""
    from io import BytesIO

    from PIL import Image

    width = page.viewport_size["width"]
    height = min(page.evaluate("() => document.documentElement.scrollHeight"), tallest)
    shot = page.screenshot(full_page=True, clip={"x": 0, "y": 0, "width": width, "height": height})
    image = Image.open(BytesIO(shot)).convert("RGB").quantize(colors=128, dither=Image.Dither.NONE)
    image.save(path, optimize=True)
