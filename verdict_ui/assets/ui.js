// verdict ui: keyboard labelling on a review item (p PASS, f FAIL, u UNCLEAR, j/k move, c critique, n next item).
// Progressive: without this file the form is an ordinary form of radio buttons.
'use strict';
(function () {
  const typing = (el) => el && (el.tagName === 'TEXTAREA' || el.tagName === 'SELECT' ||
    (el.tagName === 'INPUT' && el.type !== 'radio'));
  const form = document.getElementById('label-form');
  const sets = form ? Array.from(form.querySelectorAll('fieldset.dimension')) : [];
  const critique = document.getElementById('critique');
  let current = 0;

  function focusSet(i) {
    if (!sets.length) return;
    current = Math.max(0, Math.min(i, sets.length - 1));
    sets.forEach((s, j) => s.classList.toggle('current', j === current));
    const target = sets[current].querySelector('input:checked') || sets[current].querySelector('input');
    target.focus();
  }

  function choose(value) {
    const input = sets[current].querySelector('input[value="' + value + '"]');
    input.checked = true;
    if (current < sets.length - 1) focusSet(current + 1);
    else critique.focus();
  }

  document.addEventListener('keydown', (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey || typing(e.target)) return;
    const key = e.key.toLowerCase();
    const next = document.getElementById('next-item');
    const labels = { p: 'PASS', f: 'FAIL', u: 'UNCLEAR' };
    if (sets.length && labels[key]) choose(labels[key]);
    else if (sets.length && key === 'j') focusSet(current + 1);
    else if (sets.length && key === 'k') focusSet(current - 1);
    else if (critique && key === 'c') critique.focus();
    else if (next && key === 'n') next.click();
    else return;
    e.preventDefault();
  });

  if (sets.length && !document.getElementById('reviewer')) focusSet(0);
})();
