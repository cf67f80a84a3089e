// The only script on hangar's pages: copy buttons, a scope hint, and the delivery log's
// self-refresh. Everything works without it except copying with one click.
"use strict";

function copyFrom(id) {
  const field = document.getElementById(id);
  const status = document.querySelector('[data-copy-status="' + id + '"]');
  const done = (ok) => {
    if (status) {
      status.textContent = ok
        ? "Copied to the clipboard."
        : "Could not copy: select the text and copy it yourself.";
    }
  };
  field.focus();
  field.select();
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(field.value).then(() => done(true), () => done(false));
  } else {
    // Plain-http demo servers have no Clipboard API; the old command still works there.
    done(document.execCommand("copy"));
  }
}

document.addEventListener("DOMContentLoaded", () => {
  for (const button of document.querySelectorAll("button[data-copy]")) {
    button.addEventListener("click", () => copyFrom(button.dataset.copy));
  }

  // read:members.full only adds fields: tick read:members with it, as the hint says.
  const full = document.querySelector('input[name="scopes"][value="read:members.full"]');
  const basic = document.querySelector('input[name="scopes"][value="read:members"]');
  if (full && basic) {
    full.addEventListener("change", () => {
      if (full.checked) basic.checked = true;
    });
  }

  const refresh = document.getElementById("auto-refresh");
  if (refresh) {
    const seconds = Number(refresh.dataset.refreshSeconds || "2");
    // Not while a form is being filled in (Recover's time, the log's filters): the reload
    // would lose what was typed. It waits for the next turn instead.
    let typed = false;
    document.addEventListener("input", () => {
      typed = true;
    });
    const reload = () => {
      const active = document.activeElement;
      if (typed || (active && active.form)) {
        window.setTimeout(reload, seconds * 1000);
      } else {
        window.location.reload();
      }
    };
    window.setTimeout(reload, seconds * 1000);
  }
});
