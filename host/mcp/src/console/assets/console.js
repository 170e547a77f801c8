// Warden console: keeps the pending approvals current without a reload.
// Approvals that arrive are added and answered ones removed, keyed by
// id, so a form being filled in is never replaced under the person.
"use strict";
(function () {
  const list = document.getElementById("pending");
  if (!list) return;
  const source = list.getAttribute("data-src");
  const count = document.getElementById("pending-count");
  async function refresh() {
    let response;
    try {
      response = await fetch(source, { credentials: "same-origin", cache: "no-store" });
    } catch (e) {
      return;
    }
    if (response.status === 401) { window.location.assign("/console/login"); return; }
    if (!response.ok) return;
    const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
    const items = fresh.querySelectorAll("article[data-id]");
    const wanted = new Set();
    items.forEach(function (item) {
      const id = item.getAttribute("data-id");
      wanted.add(id);
      if (!list.querySelector('article[data-id="' + CSS.escape(id) + '"]')) {
        list.appendChild(document.importNode(item, true));
      }
    });
    list.querySelectorAll("article[data-id]").forEach(function (item) {
      if (!wanted.has(item.getAttribute("data-id"))) item.remove();
    });
    const empty = list.querySelector(".empty");
    if (empty) empty.hidden = wanted.size > 0;
    if (count) count.textContent = String(wanted.size);
  }
  setInterval(refresh, 2000);
})();
