// DOM helpers of the planstack web UI: elements built with textContent only (nothing a run or a
// model wrote is ever parsed as HTML), formatting, and the one view on screen.

const SVG_NS = "http://www.w3.org/2000/svg";
const main = document.getElementById("main");
let leaving = null; // how the view on screen ends its streams and timers

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  setAttrs(el, attrs);
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

function setAttrs(el, attrs) {
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else el.setAttribute(name, value === true ? "" : String(value));
  }
}

export function json(value, limit) {
  const text = JSON.stringify(value, null, 2);
  if (text === undefined) return "null";
  return limit && text.length > limit ? text.slice(0, limit) + "\n… (" + (text.length - limit) + " more characters)" : text;
}

export function when(ts) {
  return ts ? new Date(ts * 1000).toLocaleString() : "—";
}

export function seconds(s) {
  if (s === null || s === undefined || Number.isNaN(s)) return "—";
  return s < 1 ? Math.round(s * 1000) + " ms" : s.toFixed(s < 10 ? 2 : 1) + " s";
}

export function fill(el, ...children) {
  el.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
}


// Replace the view on screen (ending the previous one's streams and timers).
export function show(...nodes) {
  if (leaving) leaving();
  leaving = null;
  fill(main, ...nodes);
}

// What to stop when the view now on screen is replaced.
export function onLeave(stop) {
  leaving = stop;
}
