// wallet-ops console: progressive enhancement only. Every page works without this file; with it the
// one-time secret opens as a modal dialog (focus inside, Escape closes, the page behind inert) and gets a
// copy button, times show in the browser's time zone, the navigation's counts of waiting decisions stay
// current, the menu folds on a phone, table cells are named in their stacked (phone) layout, and a reason
// being typed survives a session that ended meanwhile. No inline script anywhere: the
// Content-Security-Policy allows scripts from this origin only.
'use strict';

const NARROW = '(max-width: 48rem)';
const POLL_MS = Number(document.documentElement.dataset.pollMs) || 15000;

/** Open on a wide screen, folded behind its button on a narrow one (and whenever the width crosses over). */
function foldMenu() {
  document.documentElement.classList.add('js');
  const menu = document.querySelector('details[data-menu]');
  if (!menu) return;
  const narrow = window.matchMedia(NARROW);
  const sync = () => {
    menu.open = !narrow.matches;
  };
  sync();
  narrow.addEventListener('change', sync);
  // Escape closes the open menu on a phone and gives focus back to its button.
  menu.addEventListener('keydown', (event) => {
    if (event.key === 'Escape' && narrow.matches && menu.open) {
      menu.open = false;
      menu.querySelector('summary').focus();
    }
  });
}

/** <time datetime> in the viewer's own zone; the UTC text the server wrote stays as the tooltip. */
function localTimes() {
  const format = new Intl.DateTimeFormat(undefined, {
    year: 'numeric',
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    timeZoneName: 'short',
  });
  for (const element of document.querySelectorAll('time[datetime]')) {
    const when = new Date(element.getAttribute('datetime'));
    if (Number.isNaN(when.getTime()) || element.dataset.local) continue;
    element.title = element.textContent.trim();
    element.textContent = format.format(when);
    element.dataset.local = '1';
  }
}

/** Stacked tables name each cell by its column header on a phone (cells rendered with a data-label keep it). */
function labelCells() {
  for (const table of document.querySelectorAll('main table')) {
    const headers = [...table.querySelectorAll('thead th')].map((th) => th.textContent.trim());
    if (headers.length === 0) continue;
    for (const row of table.querySelectorAll('tbody tr')) {
      [...row.children].forEach((cell, index) => {
        if (index > 0 && !cell.hasAttribute('data-label') && headers[index])
          cell.setAttribute('data-label', headers[index]);
      });
    }
  }
}

/**
 * A list wider than the screen scrolls inside its section: such a section takes keyboard focus, so that it can
 * be scrolled without a mouse (and says what it is through its heading, aria-labelledby).
 */
function focusableScrollers() {
  const mark = () => {
    for (const section of document.querySelectorAll('main section')) {
      const scrolls = section.scrollWidth > section.clientWidth + 1;
      if (scrolls && !section.hasAttribute('tabindex')) section.setAttribute('tabindex', '0');
      else if (!scrolls && section.getAttribute('tabindex') === '0') section.removeAttribute('tabindex');
    }
  };
  mark();
  let pending = null;
  window.addEventListener('resize', () => {
    clearTimeout(pending);
    pending = setTimeout(mark, 100);
  });
}

/** The navigation's counts: asked for while the tab is visible, never while hidden; stops when the session ends. */
function pollWaiting() {
  const badges = document.querySelectorAll('[data-waiting]');
  if (badges.length === 0) return;
  let timer = null;
  let stopped = false;
  const show = (counts) => {
    for (const badge of badges) {
      const count = Number(counts[badge.dataset.waiting]) || 0;
      badge.querySelector('[data-count]').textContent = String(count);
      badge.hidden = count === 0;
    }
  };
  const schedule = () => {
    clearTimeout(timer);
    if (!stopped && document.visibilityState === 'visible') timer = setTimeout(ask, POLL_MS);
  };
  async function ask() {
    try {
      const response = await fetch('/console/waiting', {
        credentials: 'same-origin',
        headers: { accept: 'application/json' },
      });
      if (response.status === 401) {
        stopped = true;
        return;
      }
      if (response.ok) show(await response.json());
    } catch {
      // Offline for a moment: try again at the next tick.
    }
    schedule();
  }
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'visible') ask();
    else clearTimeout(timer);
  });
  schedule();
}

/**
 * A reason being typed is kept in this tab's sessionStorage, per form, until the page the form was on shows
 * again: a session that ended meanwhile costs nothing typed. Reasons only: never a password or a secret.
 */
function keepDrafts() {
  const fields = document.querySelectorAll(
    'main form[method="post"] textarea[name="reason"], main form[method="post"] input[name="reason"]',
  );
  for (const field of fields) {
    const key = `wo-draft:${field.form.getAttribute('action')}:${field.id || field.name}`;
    let saved;
    try {
      saved = sessionStorage.getItem(key);
    } catch {
      return;
    }
    if (saved && !field.value) field.value = saved;
    field.addEventListener('input', () => {
      try {
        if (field.value) sessionStorage.setItem(key, field.value);
        else sessionStorage.removeItem(key);
      } catch {
        /* storage full or off: the draft is simply not kept */
      }
    });
  }
  // A success message means the last form went through: its drafts are done with.
  if (document.querySelector('main [data-flash="ok"]')) {
    try {
      const pending = sessionStorage.getItem('wo-draft-sent');
      if (pending) sessionStorage.removeItem(pending);
      sessionStorage.removeItem('wo-draft-sent');
    } catch {
      /* nothing kept */
    }
  }
  document.addEventListener('submit', (event) => {
    const reason = event.target.querySelector && event.target.querySelector('[name="reason"]');
    if (!reason) return;
    try {
      sessionStorage.setItem(
        'wo-draft-sent',
        `wo-draft:${event.target.getAttribute('action')}:${reason.id || reason.name}`,
      );
    } catch {
      /* nothing kept */
    }
  });
}

/**
 * The field to start with: the first one in error, else the first field of a page that is one form. A list's
 * bulk form (the pending operations') is not the page's purpose: focusing its reason field would open the list
 * scrolled to its bottom, beside "Reject selected".
 */
function focusFirstField() {
  if (document.querySelector('dialog[open]') || (document.activeElement && document.activeElement !== document.body))
    return;
  const invalid = document.querySelector('main [aria-invalid="true"]');
  const forms = document.querySelectorAll('main form.stack:not(.bulk)');
  const first =
    invalid ||
    (forms.length === 1
      ? forms[0].querySelector('input:not([type="hidden"]):not([disabled]), select, textarea')
      : null);
  if (first) first.focus();
}

function openModals() {
  for (const dialog of document.querySelectorAll('dialog[data-modal]')) {
    if (typeof dialog.showModal !== 'function') continue;
    // Rendered open (so it shows without JavaScript); reopened as a modal, which moves focus to its first control.
    dialog.close();
    dialog.showModal();
    dialog.addEventListener('close', () => {
      // close() above queues a close event that arrives while the modal is already open: not a real close.
      if (dialog.open) return;
      // The secret leaves the page with the dialog.
      for (const field of dialog.querySelectorAll('[data-secret]')) field.value = '';
      dialog.remove();
    });
  }
}

function enableCopyButtons() {
  for (const button of document.querySelectorAll('button[data-copy]')) {
    button.hidden = false;
    const field = document.getElementById(button.dataset.copy);
    if (field) field.addEventListener('focus', () => field.select());
    button.addEventListener('click', async () => {
      const status = button.parentElement && button.parentElement.querySelector('[data-copy-status]');
      const say = (text) => {
        if (status) status.textContent = text;
      };
      if (!field) return;
      try {
        await navigator.clipboard.writeText(field.value);
        say('Copied to the clipboard.');
      } catch {
        field.focus();
        field.select();
        say('Selected: press Ctrl+C (⌘C on a Mac) to copy.');
      }
    });
  }
}

document.addEventListener('DOMContentLoaded', () => {
  foldMenu();
  localTimes();
  labelCells();
  focusableScrollers();
  keepDrafts();
  enableCopyButtons();
  openModals();
  focusFirstField();
  pollWaiting();
});
