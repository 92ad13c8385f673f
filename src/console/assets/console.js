// wallet-ops console: progressive enhancement only. Every page works without this file; with it the
// one-time secret opens as a modal dialog (focus inside, Escape closes, the page behind inert) and gets a
// copy button. No inline script anywhere: the Content-Security-Policy allows scripts from this origin only.
'use strict';

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
      const say = (text) => { if (status) status.textContent = text; };
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
  enableCopyButtons();
  openModals();
});
