// The paperscope map: one canvas of points (pan, wheel zoom, hover, click, lasso and box selection),
// the selected paper or query as a star with lines to its neighbours, and topic labels placed so that
// none overlaps another or leaves the plot: coarse topics when zoomed out, fine topics as you zoom in,
// label size by topic size. The same code draws the app's map (a Streamlit component) and the
// self-contained HTML export. Text from the corpus only ever goes through textContent.

const PS_FONT = 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif';
const PS_LEADER = 0.04; // a label's box is at most this share of the map's smaller side from its anchor
const PS_LABEL_SCALES = [1, 0.85, 0.72]; // a label that finds no room near its papers shrinks, then hides
const PS_FINE_ZOOM = 1.8; // zoomed in this far, fine topic labels replace the coarse ones
const PS_HIT_PX = 9; // how close the pointer must be to a point to hover or click it
const PS_UNCLUSTERED = "#c8c8c8";
const PS_RINGED = 300; // a selection of more papers is drawn in full colour, not ringed
const PS_WHEEL_STEP = 1.13; // one wheel notch zooms this much: five pass PS_FINE_ZOOM (1.13^5 = 1.84)
// A collection shown: its members as filled diamonds in one colour, its recommendations as rings
// numbered by rank in another, told apart at a glance (and by the legend of marks).
const PS_MEMBER = "#c2185b";
const PS_RECOMMENDED = "#1565c0";

function psDecode(text, Type) {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return new Type(bytes.buffer);
}

function psElement(tag, className, parent) {
  const element = document.createElement(tag);
  if (className) element.className = className;
  if (parent) parent.appendChild(element);
  return element;
}

// Two lines for a long name, split at the comma or space nearest its middle.
function psWrap(text) {
  if (text.length <= 26) return text;
  let best = -1;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === " " && (best < 0 || Math.abs(i - text.length / 2) < Math.abs(best - text.length / 2))) best = i;
  }
  return best < 0 ? text : text.slice(0, best) + "\n" + text.slice(best + 1);
}

// How far (x, y) is from the nearest point of a box: 0 inside it.
function psDistanceToBox(x, y, box) {
  return Math.hypot(Math.max(box.x - x, 0, x - box.x - box.w), Math.max(box.y - y, 0, y - box.y - box.h));
}

function psBoxesOverlap(a, b, margin) {
  return a.x < b.x + b.w + margin && b.x < a.x + a.w + margin && a.y < b.y + b.h + margin && b.y < a.y + a.h + margin;
}

function psInPolygon(x, y, polygon) {
  let inside = false;
  for (let i = 0, j = polygon.length - 1; i < polygon.length; j = i++) {
    const [xi, yi] = polygon[i];
    const [xj, yj] = polygon[j];
    if (yi > y !== yj > y && x < ((xj - xi) * (y - yi)) / (yj - yi) + xi) inside = !inside;
  }
  return inside;
}

class PaperscopeMap {
  constructor(root, payload, send) {
    this.root = root;
    this.send = send;
    this.mode = "pan";
    this.hover = -1;
    this.build();
    this.load(payload);
    this.resize();
    this.fit();
    this.observer = new ResizeObserver(() => this.resize());
    this.observer.observe(this.frame);
    window.addEventListener("resize", (this.onWindow = () => this.resize()));
  }

  destroy() {
    this.observer.disconnect();
    window.removeEventListener("resize", this.onWindow);
    this.frame.remove();
  }

  build() {
    this.frame = psElement("div", "ps-map", this.root);
    this.frame.tabIndex = 0;
    this.points = psElement("canvas", "ps-points", this.frame);
    // The marks (star, its lines, rings, hover) under the labels: labels are placed clear of the
    // star and its papers, so only lines pass under a label's backing, never across its text.
    this.marks = psElement("canvas", "ps-marks", this.frame);
    this.labelLayer = psElement("div", "ps-labels", this.frame);
    this.tools = psElement("div", "ps-tools", this.frame);
    this.tip = psElement("div", "ps-tip", this.frame);
    this.status = psElement("div", "ps-status", this.frame);
    this.buttons = {};
    for (const [mode, text, title] of [
      ["pan", "Pan", "Drag to pan, scroll to zoom, click a point to select it"],
      ["lasso", "Lasso", "Draw around papers to select them (or shift-drag in Pan)"],
      ["box", "Box", "Drag a rectangle to select the papers in it"],
    ]) {
      const button = psElement("button", "ps-button", this.tools);
      button.textContent = text;
      button.title = title;
      button.dataset.mode = mode;
      button.onclick = () => this.setMode(mode);
      this.buttons[mode] = button;
    }
    const reset = psElement("button", "ps-button", this.tools);
    reset.textContent = "Reset view";
    reset.onclick = () => this.fit();
    this.setMode("pan");
    this.frame.addEventListener("pointerdown", (event) => this.onDown(event));
    this.frame.addEventListener("pointermove", (event) => this.onMove(event));
    this.frame.addEventListener("pointerup", (event) => this.onUp(event));
    this.frame.addEventListener("pointerleave", () => this.setHover(-1));
    this.frame.addEventListener("wheel", (event) => this.onWheel(event), { passive: false });
  }

  addSearch() {
    this.search = psElement("input", "ps-search", this.tools);
    this.search.type = "search";
    this.search.placeholder = "Search titles";
    this.search.addEventListener("input", () => this.findTitles(this.search.value, false));
    this.search.addEventListener("keydown", (event) => {
      if (event.key === "Enter") this.findTitles(this.search.value, true);
    });
  }

  load(payload) {
    const first = !this.payload;
    this.payload = payload;
    this.key = payload.key;
    this.count = payload.count;
    if (first || payload.x !== this.rawX) {
      this.rawX = payload.x;
      this.colourBy = null;
      this.x = psDecode(payload.x, Float32Array);
      this.y = psDecode(payload.y, Float32Array);
      this.fine = psDecode(payload.fine, Int16Array);
      this.coarse = psDecode(payload.coarse, Int16Array);
      this.trust = psDecode(payload.trust, Uint8Array);
      this.knn = payload.knn ? psDecode(payload.knn, Int32Array) : null;
      this.buildGrid();
    }
    // Colour by a column (payload.colour, from mapplot.map_colours) or by the topics of the level shown.
    const custom = payload.colour && payload.colour.values ? payload.colour : null;
    if (custom && custom.values !== this.rawColour) {
      this.rawColour = custom.values;
      this.customColour = psDecode(custom.values, Int16Array);
    }
    const colourBy = custom ? this.customColour : payload.level === "fine" ? this.fine : this.coarse;
    const palette = custom ? custom.palette : payload.palette;
    if (colourBy !== this.colourBy || palette.join() !== this.paletteKey) {
      this.colourBy = colourBy;
      this.palette = palette;
      this.paletteKey = palette.join();
      this.buildBuckets();
    }
    this.drawLegend(custom);
    this.members = payload.members || [];
    this.drawMarksLegend();
    this.selected = payload.selected || [];
    this.neighbours = payload.neighbours || [];
    this.chosen = new Set(payload.chosen || []);
    this.star = payload.star || null;
    if (!this.star && this.selected.length) {
      let sx = 0;
      let sy = 0;
      for (const row of this.selected) {
        sx += this.x[row];
        sy += this.y[row];
      }
      this.star = [sx / this.selected.length, sy / this.selected.length];
    }
    if (payload.search && !this.search) this.addSearch();
    if (payload.key !== this.labelKey || payload.labels.length !== this.labels.length) this.makeLabels();
  }

  update(payload, send) {
    this.send = send;
    this.load(payload);
    this.resize();
  }

  // A uniform grid over the data for hit tests: about four points a cell.
  buildGrid() {
    let minX = Infinity, maxX = -Infinity, minY = Infinity, maxY = -Infinity;
    for (let i = 0; i < this.count; i++) {
      minX = Math.min(minX, this.x[i]);
      maxX = Math.max(maxX, this.x[i]);
      minY = Math.min(minY, this.y[i]);
      maxY = Math.max(maxY, this.y[i]);
    }
    this.bounds = { minX, maxX, minY, maxY };
    const cells = Math.max(1, Math.min(512, Math.round(Math.sqrt(this.count / 4))));
    const spanX = Math.max(maxX - minX, 1e-9);
    const spanY = Math.max(maxY - minY, 1e-9);
    this.grid = { cells, minX, minY, sizeX: spanX / cells, sizeY: spanY / cells };
    const cellOf = new Int32Array(this.count);
    const starts = new Int32Array(cells * cells + 1);
    for (let i = 0; i < this.count; i++) {
      const cx = Math.min(cells - 1, Math.floor((this.x[i] - minX) / this.grid.sizeX));
      const cy = Math.min(cells - 1, Math.floor((this.y[i] - minY) / this.grid.sizeY));
      cellOf[i] = cy * cells + cx;
      starts[cellOf[i] + 1]++;
    }
    for (let c = 0; c < cells * cells; c++) starts[c + 1] += starts[c];
    const fill = starts.slice(0, -1);
    const order = new Int32Array(this.count);
    for (let i = 0; i < this.count; i++) order[fill[cellOf[i]]++] = i;
    this.grid.starts = starts;
    this.grid.order = order;
  }

  // Points grouped by colour, so each colour is one canvas path.
  buildBuckets() {
    const palette = this.palette;
    const groups = new Map();
    for (let i = 0; i < this.count; i++) {
      const topic = this.colourBy[i];
      const colour = topic < 0 ? PS_UNCLUSTERED : palette[topic % palette.length];
      if (!groups.has(colour)) groups.set(colour, []);
      groups.get(colour).push(i);
    }
    // Unclustered (grey) first, so coloured points are drawn over them.
    this.buckets = [...groups.entries()].sort((a, b) => (b[0] === PS_UNCLUSTERED) - (a[0] === PS_UNCLUSTERED));
    this.colourOf = (row) => {
      const topic = this.colourBy[row];
      return topic < 0 ? PS_UNCLUSTERED : palette[topic % palette.length];
    };
  }

  // The legend of a colour by column (top right): a swatch per category, or the scale from low to high.
  drawLegend(custom) {
    const key = custom ? JSON.stringify([custom.title, custom.legend]) : "";
    if (key === this.legendKey) return;
    this.legendKey = key;
    if (this.legend) this.legend.remove();
    this.legend = null;
    if (!custom) return;
    this.legend = psElement("div", "ps-legend", this.frame);
    psElement("b", "", this.legend).textContent = custom.title;
    const legend = custom.legend;
    if (legend.kind === "scale") {
      psElement("div", "ps-scale", this.legend).style.background = `linear-gradient(to right, ${legend.colours.join(", ")})`;
      const ends = psElement("div", "ps-scale-ends", this.legend);
      psElement("span", "", ends).textContent = legend.low;
      psElement("span", "", ends).textContent = legend.high;
      if (legend.missing) {
        const row = psElement("div", "ps-legend-item", this.legend);
        psElement("span", "ps-swatch", row).style.background = PS_UNCLUSTERED;
        psElement("span", "", row).textContent = legend.missing;
      }
    } else {
      for (const item of legend.items) {
        const row = psElement("div", "ps-legend-item", this.legend);
        row.title = item.text; // the whole value on hover, when the legend cuts it
        psElement("span", "ps-swatch", row).style.background = item.colour;
        psElement("span", "", row).textContent = item.text;
      }
    }
  }

  // The legend of a collection's marks (top right, under a colour legend): members and recommendations.
  drawMarksLegend() {
    const key = this.members.length ? `${this.members.length} ${this.legendKey}` : "";
    if (key === this.marksKey) return;
    this.marksKey = key;
    if (this.marksLegend) this.marksLegend.remove();
    this.marksLegend = null;
    if (!key) return;
    this.marksLegend = psElement("div", "ps-legend ps-marks-legend", this.frame);
    if (this.legend) this.marksLegend.style.top = `${this.legend.offsetTop + this.legend.offsetHeight + 6}px`;
    for (const [shape, text] of [
      ["ps-diamond", `in the collection (${this.members.length.toLocaleString()})`],
      ["ps-numbered", "recommended, by rank"],
    ]) {
      const row = psElement("div", "ps-legend-item", this.marksLegend);
      const swatch = psElement("span", `ps-mark ${shape}`, row);
      if (shape === "ps-numbered") swatch.textContent = "1";
      psElement("span", "", row).textContent = text;
    }
  }

  makeLabels() {
    this.labelKey = this.payload.key;
    this.labelLayer.replaceChildren();
    const largest = { coarse: 1, fine: 1 };
    for (const label of this.payload.labels) largest[label.level] = Math.max(largest[label.level], label.size);
    this.labels = this.payload.labels.map((label) => {
      const share = Math.sqrt(label.size / largest[label.level]);
      const px = label.level === "coarse" ? 13 + 6 * share : 10.5 + 3.5 * share;
      const element = psElement("div", `ps-label ps-${label.level}`, this.labelLayer);
      element.textContent = psWrap(label.text);
      element.style.fontSize = `${px.toFixed(1)}px`;
      element.dataset.level = label.level;
      element.dataset.size = label.size;
      element.style.visibility = "hidden";
      return { ...label, element, w: 0, h: 0 };
    });
  }

  setMode(mode) {
    this.mode = mode;
    for (const [name, button] of Object.entries(this.buttons)) button.classList.toggle("ps-active", name === mode);
    this.frame.style.cursor = mode === "pan" ? "grab" : "crosshair";
  }

  resize() {
    const width = Math.max(200, this.frame.clientWidth);
    const top = this.frame.getBoundingClientRect().top + window.scrollY;
    const height = this.payload.height || Math.max(380, Math.round(window.innerHeight - Math.min(top, 140) - 16));
    if (width === this.width && height === this.height) return this.draw();
    const ratio = window.devicePixelRatio || 1;
    const [previousWidth, previousHeight] = [this.width, this.height];
    this.width = width;
    this.height = height;
    this.frame.style.height = `${height}px`;
    for (const canvas of [this.points, this.marks]) {
      canvas.width = Math.round(width * ratio);
      canvas.height = Math.round(height * ratio);
      canvas.style.width = `${width}px`;
      canvas.style.height = `${height}px`;
      canvas.getContext("2d").setTransform(ratio, 0, 0, ratio, 0, 0);
    }
    if (this.scale0) {
      const factor = Math.min(width / previousWidth, height / previousHeight);
      this.scale *= factor;
      this.scale0 *= factor;
      this.draw();
    }
  }

  // The whole map in view, the same scale on both axes.
  fit() {
    const { minX, maxX, minY, maxY } = this.bounds;
    const spanX = Math.max(maxX - minX, 1e-6);
    const spanY = Math.max(maxY - minY, 1e-6);
    this.scale = Math.min((this.width * 0.9) / spanX, ((this.height - 40) * 0.9) / spanY);
    this.scale0 = this.scale;
    this.cx = (minX + maxX) / 2;
    this.cy = (minY + maxY) / 2 - 20 / this.scale; // room for the tool bar below
    this.draw();
  }

  px(x) {
    return this.width / 2 + (x - this.cx) * this.scale;
  }

  py(y) {
    return this.height / 2 - (y - this.cy) * this.scale;
  }

  draw() {
    if (this.pending) return;
    this.pending = requestAnimationFrame(() => {
      this.pending = 0;
      const started = performance.now();
      this.placeLabels();
      this.drawPoints();
      this.drawMarks();
      this.frame.dataset.drawMs = (performance.now() - started).toFixed(1);
      this.frame.dataset.ready = "1";
      this.frame.dataset.zoom = (this.scale / this.scale0).toFixed(3);
    });
  }

  focused() {
    return this.star !== null || this.chosen.size > 0 || this.neighbours.length > 0 || this.members.length > 0;
  }

  radius() {
    return this.count < 500 ? 4.5 : this.count < 5000 ? 2.6 : this.count < 50000 ? 1.6 : 1.1;
  }

  drawPoints() {
    const context = this.points.getContext("2d");
    context.clearRect(0, 0, this.width, this.height);
    const r = this.radius() * Math.min(2.5, Math.sqrt(this.scale / this.scale0));
    const dimmed = this.focused();
    context.globalAlpha = dimmed ? 0.22 : 0.85;
    for (const [colour, rows] of this.buckets) {
      context.fillStyle = colour;
      context.beginPath();
      for (const row of rows) {
        const x = this.px(this.x[row]);
        const y = this.py(this.y[row]);
        if (x < -r || y < -r || x > this.width + r || y > this.height + r) continue;
        if (r < 2) context.rect(x - r, y - r, 2 * r, 2 * r);
        else {
          context.moveTo(x + r, y);
          context.arc(x, y, r, 0, 2 * Math.PI);
        }
      }
      context.fill();
    }
    context.globalAlpha = 1;
    this.drawUnderLabels(context, r);
  }

  // On the points' canvas, under the labels: the lines from moved labels to their topics, and the
  // chosen papers (a lasso, the HTML export's search), so that neither covers a label.
  drawUnderLabels(context, r) {
    for (const label of this.labels) {
      if (!label.placed || !label.moved) continue;
      context.strokeStyle = "rgba(60,60,60,0.6)";
      context.lineWidth = 1;
      context.beginPath();
      context.moveTo(label.ax, label.ay);
      const tx = Math.max(label.box.x, Math.min(label.ax, label.box.x + label.box.w));
      const ty = Math.max(label.box.y, Math.min(label.ay, label.box.y + label.box.h));
      context.lineTo(tx, ty);
      context.stroke();
    }
    if (this.chosen.size > PS_RINGED) {
      // A large selection: its points in full colour over the dimmed map, no rings to blot it out.
      for (const row of this.chosen) {
        context.fillStyle = this.colourOf(row);
        context.fillRect(this.px(this.x[row]) - r - 0.5, this.py(this.y[row]) - r - 0.5, 2 * r + 1, 2 * r + 1);
      }
    } else {
      for (const row of this.chosen) this.ring(context, row, r + 2.5, "#111", 1.5);
    }
  }

  drawMarks() {
    const context = this.marks.getContext("2d");
    context.clearRect(0, 0, this.width, this.height);
    const r = this.radius() * Math.min(2.5, Math.sqrt(this.scale / this.scale0));
    if (this.star) {
      const sx = this.px(this.star[0]);
      const sy = this.py(this.star[1]);
      for (const [colour, width] of [
        ["rgba(255,255,255,0.95)", 4.5],
        ["rgba(20,20,20,0.85)", 1.8],
      ]) {
        context.strokeStyle = colour;
        context.lineWidth = width;
        context.beginPath();
        for (const row of this.neighbours) {
          context.moveTo(sx, sy);
          context.lineTo(this.px(this.x[row]), this.py(this.y[row]));
        }
        context.stroke();
      }
      if (!this.members.length) {
        for (const row of this.neighbours) this.ring(context, row, Math.max(r + 3.5, 6), "#111", 2.2);
      }
      for (const row of this.selected) this.ring(context, row, Math.max(r + 3.5, 6), "#111", 2.2);
    }
    this.drawn = { diamonds: 0, numbered: 0 };
    if (this.members.length) this.drawCollection(context, r);
    if (this.star) this.drawStar(context, this.px(this.star[0]), this.py(this.star[1]));
    if (this.hover >= 0) this.ring(context, this.hover, Math.max(r + 3, 6), "#e4572e", 2.5);
    if (this.drag && this.drag.polygon && this.drag.polygon.length > 1) {
      context.strokeStyle = "#e4572e";
      context.fillStyle = "rgba(228,87,46,0.08)";
      context.lineWidth = 1.5;
      context.setLineDash([5, 4]);
      context.beginPath();
      this.drag.polygon.forEach(([x, y], i) => (i ? context.lineTo(x, y) : context.moveTo(x, y)));
      context.closePath();
      context.fill();
      context.stroke();
      context.setLineDash([]);
    }
  }

  ring(context, row, radius, colour, width) {
    const x = this.px(this.x[row]);
    const y = this.py(this.y[row]);
    context.fillStyle = this.colourOf(row);
    context.strokeStyle = colour;
    context.lineWidth = width;
    context.beginPath();
    context.arc(x, y, radius, 0, 2 * Math.PI);
    context.fill();
    context.stroke();
  }

  // A collection's members as filled diamonds, its recommendations as rings numbered by rank (the
  // best drawn last, on top); what was drawn is kept in this.drawn and the frame's data attributes.
  drawCollection(context, r) {
    const size = this.members.length > PS_RINGED ? Math.max(r + 1.5, 3.5) : Math.max(r + 4, 7);
    context.fillStyle = PS_MEMBER;
    context.strokeStyle = "#fff";
    context.lineWidth = 1.5;
    for (const row of this.members) {
      const x = this.px(this.x[row]);
      const y = this.py(this.y[row]);
      context.beginPath();
      context.moveTo(x, y - size);
      context.lineTo(x + size, y);
      context.lineTo(x, y + size);
      context.lineTo(x - size, y);
      context.closePath();
      context.fill();
      context.stroke();
    }
    const radius = Math.max(r + 4, 8);
    context.font = `700 ${radius > 9 ? 11 : 10}px ${PS_FONT}`;
    context.textAlign = "center";
    context.textBaseline = "middle";
    for (let rank = this.neighbours.length; rank >= 1; rank--) {
      const row = this.neighbours[rank - 1];
      const x = this.px(this.x[row]);
      const y = this.py(this.y[row]);
      context.fillStyle = "#fff";
      context.strokeStyle = PS_RECOMMENDED;
      context.lineWidth = 2.2;
      context.beginPath();
      context.arc(x, y, radius, 0, 2 * Math.PI);
      context.fill();
      context.stroke();
      context.fillStyle = PS_RECOMMENDED;
      context.fillText(String(rank), x, y + 0.5);
    }
    this.drawn = { diamonds: this.members.length, numbered: this.neighbours.length };
    this.frame.dataset.diamonds = String(this.drawn.diamonds);
    this.frame.dataset.numbered = String(this.drawn.numbered);
  }

  drawStar(context, x, y) {
    context.fillStyle = "rgba(255,255,255,0.85)";
    context.beginPath();
    context.arc(x, y, 19, 0, 2 * Math.PI);
    context.fill();
    context.beginPath();
    for (let i = 0; i < 10; i++) {
      const radius = i % 2 ? 6.5 : 15;
      const angle = -Math.PI / 2 + (i * Math.PI) / 5;
      context.lineTo(x + radius * Math.cos(angle), y + radius * Math.sin(angle));
    }
    context.closePath();
    context.fillStyle = "#ffc800";
    context.strokeStyle = "#111";
    context.lineWidth = 2;
    context.fill();
    context.stroke();
  }

  // Greedy placement, largest topic first: on an anchor (one of its topic's densest papers) if
  // free, else at the nearest free spot within PS_LEADER of one (joined to it by a short line when
  // the box leaves the anchor uncovered), smaller if need be; one that fits nowhere near is not shown.
  placeLabels() {
    const zoom = this.scale / this.scale0;
    const hasCoarse = this.labels.some((label) => label.level === "coarse");
    const level = this.payload.level === "fine" || zoom >= PS_FINE_ZOOM || !hasCoarse ? "fine" : "coarse";
    // Kept free: the tool bar, the page's corner button over the map's top left, the star and the
    // papers it is joined to.
    const tools = { x: this.tools.offsetLeft - 4, y: this.tools.offsetTop - 4, w: this.tools.offsetWidth + 8, h: this.tools.offsetHeight + 8 };
    const taken = [tools, { x: 0, y: 0, w: 44, h: 40 }];
    for (const legend of [this.legend, this.marksLegend]) {
      if (legend) taken.push({ x: legend.offsetLeft - 4, y: legend.offsetTop - 4, w: legend.offsetWidth + 8, h: legend.offsetHeight + 8 });
    }
    if (this.members.length <= PS_RINGED) {
      for (const row of this.members) taken.push({ x: this.px(this.x[row]) - 9, y: this.py(this.y[row]) - 9, w: 18, h: 18 });
    }
    if (this.star) {
      taken.push({ x: this.px(this.star[0]) - 19, y: this.py(this.star[1]) - 19, w: 38, h: 38 });
      for (const row of this.neighbours.concat(this.selected)) {
        taken.push({ x: this.px(this.x[row]) - 7, y: this.py(this.y[row]) - 7, w: 14, h: 14 });
      }
    }
    this.labelLayer.classList.toggle("ps-dim", this.focused());
    const wanted = this.labels.filter((label) => label.level === level).sort((a, b) => b.size - a.size);
    for (const label of this.labels) {
      if (!label.w) {
        // All reads before any write: one layout of the page, not one per label.
        label.w = label.element.offsetWidth;
        label.h = label.element.offsetHeight;
      }
    }
    for (const label of this.labels) {
      label.placed = false;
      label.element.style.visibility = "hidden";
    }
    const reach = PS_LEADER * Math.min(this.width, this.height);
    for (const label of wanted) {
      const spot = this.spotNear(label, reach, taken);
      if (!spot) continue;
      const { box, scale } = spot;
      taken.push(box);
      Object.assign(label, { box, ax: spot.ax, ay: spot.ay, placed: true });
      label.moved = psDistanceToBox(label.ax, label.ay, box) > 0;
      label.element.style.transform = `translate(${box.x}px, ${box.y}px) scale(${scale})`;
      label.element.style.visibility = "visible";
    }
    this.frame.dataset.labelLevel = level;
  }

  // Where a label goes: full size by one of its anchors (its topic's densest papers, densest
  // first, those in view), else smaller there; never farther (a label that fits nowhere near its
  // papers is not drawn, and comes back as you zoom in). {box, scale, ax, ay} or null.
  spotNear(label, reach, taken) {
    const anchors = label.anchors
      .map(([x, y]) => [this.px(x), this.py(y)])
      .filter(([x, y]) => x >= 0 && y >= 0 && x <= this.width && y <= this.height);
    for (const scale of PS_LABEL_SCALES) {
      for (const [ax, ay] of anchors) {
        const box = this.freeSpot(label, ax, ay, scale, reach, taken);
        if (box) return { box, scale, ax, ay };
      }
    }
    return null;
  }

  // The free box of the label at ``scale`` nearest the anchor (ax, ay) on the screen: centred on
  // it if free, else over it off centre, else beside it, at most ``reach`` pixels from it; null if
  // none is free and wholly inside the map.
  freeSpot(label, ax, ay, scale, reach, taken) {
    const w = Math.round(label.w * scale);
    const h = Math.round(label.h * scale);
    const inside = (box) => box.x >= 2 && box.y >= 2 && box.x + box.w <= this.width - 2 && box.y + box.h <= this.height - 2;
    // Left edges (tops) with the anchor inside the box at quarters (thirds) of its width (height),
    // or the box beside it, clear of it by up to ``reach``.
    const clear = [0, 0.1, 0.25, 0.45, 0.7, 1].map((share) => Math.floor(share * reach) + 1);
    const lefts = [-2, -1, 0, 1, 2].map((i) => ax - w / 2 + (i * w) / 4).concat(clear.flatMap((g) => [ax + g, ax - w - g]));
    const tops = [-1, 0, 1].map((j) => ay - h / 2 + (j * h) / 3).concat(clear.flatMap((g) => [ay + g, ay - h - g]));
    const candidates = [];
    for (const left of lefts) {
      for (const top of tops) {
        const box = { x: Math.round(left), y: Math.round(top), w, h };
        const leader = psDistanceToBox(ax, ay, box);
        if (leader <= reach) candidates.push([leader + Math.hypot(box.x + w / 2 - ax, box.y + h / 2 - ay) * 1e-4, box]);
      }
    }
    candidates.sort((a, b) => a[0] - b[0]);
    for (const [, box] of candidates) {
      if (inside(box) && !taken.some((other) => psBoxesOverlap(box, other, 2))) return box;
    }
    return null;
  }

  // The nearest point within PS_HIT_PX pixels of (x, y) on screen, or -1.
  nearest(x, y) {
    const dataX = this.cx + (x - this.width / 2) / this.scale;
    const dataY = this.cy - (y - this.height / 2) / this.scale;
    const reach = PS_HIT_PX / this.scale;
    const g = this.grid;
    const x0 = Math.max(0, Math.floor((dataX - reach - g.minX) / g.sizeX));
    const x1 = Math.min(g.cells - 1, Math.floor((dataX + reach - g.minX) / g.sizeX));
    const y0 = Math.max(0, Math.floor((dataY - reach - g.minY) / g.sizeY));
    const y1 = Math.min(g.cells - 1, Math.floor((dataY + reach - g.minY) / g.sizeY));
    let best = -1;
    let bestDistance = reach * reach;
    for (let cy = y0; cy <= y1; cy++) {
      for (let cx = x0; cx <= x1; cx++) {
        const cell = cy * g.cells + cx;
        for (let k = g.starts[cell]; k < g.starts[cell + 1]; k++) {
          const row = g.order[k];
          const distance = (this.x[row] - dataX) ** 2 + (this.y[row] - dataY) ** 2;
          if (distance <= bestDistance) {
            bestDistance = distance;
            best = row;
          }
        }
      }
    }
    return best;
  }

  local(event) {
    const rect = this.frame.getBoundingClientRect();
    return [event.clientX - rect.left, event.clientY - rect.top];
  }

  onDown(event) {
    if (event.target.closest(".ps-tools") || event.button !== 0) return;
    const [x, y] = this.local(event);
    const mode = this.mode === "pan" && event.shiftKey ? "lasso" : this.mode;
    this.drag = { x, y, cx: this.cx, cy: this.cy, mode, moved: false, polygon: mode === "pan" ? null : [[x, y]] };
    this.frame.setPointerCapture(event.pointerId);
    if (mode === "pan") this.frame.style.cursor = "grabbing";
  }

  onMove(event) {
    const [x, y] = this.local(event);
    if (!this.drag) {
      if (!event.target.closest(".ps-tools")) this.setHover(this.nearest(x, y), x, y);
      return;
    }
    if (Math.abs(x - this.drag.x) + Math.abs(y - this.drag.y) > 4) this.drag.moved = true;
    if (this.drag.mode === "pan") {
      this.setHover(-1); // the tooltip named the paper that was under the pointer
      this.cx = this.drag.cx - (x - this.drag.x) / this.scale;
      this.cy = this.drag.cy + (y - this.drag.y) / this.scale;
      this.draw();
    } else {
      if (this.drag.mode === "lasso") this.drag.polygon.push([x, y]);
      else {
        const [x0, y0] = [this.drag.x, this.drag.y];
        this.drag.polygon = [[x0, y0], [x, y0], [x, y], [x0, y]];
      }
      this.drawMarks();
    }
  }

  onUp(event) {
    const drag = this.drag;
    if (!drag) return;
    this.drag = null;
    this.setMode(this.mode);
    const [x, y] = this.local(event);
    if (!drag.moved) {
      const row = this.nearest(x, y);
      if (row >= 0) this.send("click", row);
    } else if (drag.polygon && drag.polygon.length > 2) {
      const rows = this.rowsInside(drag.polygon);
      this.chosen = new Set(rows);
      this.send("lasso", rows);
    }
    this.draw();
  }

  rowsInside(polygon) {
    const xs = polygon.map((p) => p[0]);
    const ys = polygon.map((p) => p[1]);
    const [left, right, top, bottom] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
    const rows = [];
    for (let row = 0; row < this.count; row++) {
      const x = this.px(this.x[row]);
      const y = this.py(this.y[row]);
      if (x >= left && x <= right && y >= top && y <= bottom && psInPolygon(x, y, polygon)) rows.push(row);
    }
    return rows;
  }

  // The deepest zoom: about four papers' worth of the map's area in view (at least 8x).
  maxZoom() {
    return Math.max(8, Math.sqrt(this.count) / 2);
  }

  // A wheel notch (100 pixels, 3 lines or a page) zooms by PS_WHEEL_STEP about the pointer; a fast
  // spin or an accelerated wheel counts one notch an event at most, a touchpad's small steps less.
  // The tooltip goes: the paper under the pointer changes; the next move finds it.
  onWheel(event) {
    event.preventDefault();
    this.setHover(-1);
    const [x, y] = this.local(event);
    const dataX = this.cx + (x - this.width / 2) / this.scale;
    const dataY = this.cy - (y - this.height / 2) / this.scale;
    const notches = event.deltaY / (event.deltaMode === 1 ? 3 : event.deltaMode === 2 ? 1 : 100);
    const factor = PS_WHEEL_STEP ** -Math.max(-1, Math.min(1, notches));
    this.scale = Math.max(this.scale0 * 0.5, Math.min(this.scale0 * this.maxZoom(), this.scale * factor));
    this.cx = dataX - (x - this.width / 2) / this.scale;
    this.cy = dataY + (y - this.height / 2) / this.scale;
    this.draw();
  }

  setHover(row, x, y) {
    if (row === this.hover && row < 0) return;
    this.hover = row;
    if (row < 0) {
      this.tip.style.display = "none";
    } else {
      const names = this.payload;
      const fine = this.fine[row] >= 0 ? names.fine_names[this.fine[row]] : "unclustered";
      const coarse = this.coarse[row] >= 0 ? names.coarse_names[this.coarse[row]] : "";
      this.tip.replaceChildren();
      psElement("b", "", this.tip).textContent = names.titles ? names.titles[row] : "Click to see this paper";
      psElement("div", "ps-tip-meta", this.tip).textContent =
        `${coarse && coarse !== fine ? `${coarse} › ` : ""}${fine} · map trust ${this.trust[row]}%`;
      const custom = names.colour && names.colour.names ? names.colour : null;
      if (custom) {
        const code = this.customColour[row];
        psElement("div", "ps-tip-meta", this.tip).textContent = `${custom.title}: ${code < 0 ? "no value" : custom.names[code]}`;
      }
      this.tip.style.display = "block";
      const left = Math.min(x + 14, this.width - this.tip.offsetWidth - 4);
      const top = y + 14 + this.tip.offsetHeight > this.height ? y - this.tip.offsetHeight - 10 : y + 14;
      this.tip.style.transform = `translate(${Math.max(4, left)}px, ${Math.max(4, top)}px)`;
    }
    this.drawMarks();
  }

  // Search in the HTML export: matching titles stay bright; Enter zooms to them.
  findTitles(text, zoom) {
    const needle = text.trim().toLowerCase();
    const rows = [];
    if (needle) this.payload.titles.forEach((title, row) => title.toLowerCase().includes(needle) && rows.push(row));
    this.chosen = new Set(rows);
    this.status.textContent = needle ? `${rows.length.toLocaleString()} matching titles` : "";
    if (zoom && rows.length) {
      const xs = rows.map((row) => this.x[row]);
      const ys = rows.map((row) => this.y[row]);
      const [minX, maxX, minY, maxY] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
      this.cx = (minX + maxX) / 2;
      this.cy = (minY + maxY) / 2;
      const span = Math.max(maxX - minX, maxY - minY, (this.bounds.maxX - this.bounds.minX) / 40);
      this.scale = Math.min(this.scale0 * this.maxZoom(), (Math.min(this.width, this.height) * 0.8) / span);
    }
    this.draw();
  }

  // Standalone (HTML export): a click stars the paper and draws lines to its nearest papers.
  selectLocally(row) {
    this.selected = [row];
    this.star = [this.x[row], this.y[row]];
    const k = this.payload.knn_k;
    this.neighbours = this.knn ? Array.from(this.knn.subarray(row * k, row * k + k)).filter((r) => r !== row) : [];
    const panel = this.status;
    panel.replaceChildren();
    this.paperTitle(psElement("b", "", panel), row);
    const list = psElement("ol", "", panel);
    for (const other of this.neighbours) this.paperTitle(psElement("li", "", list), other);
    this.draw();
  }

  // A paper's title in `parent`: a link to open in a new tab when the payload has an http(s) one.
  paperTitle(parent, row) {
    const link = this.payload.links ? this.payload.links[row] : null;
    const safe = typeof link === "string" && /^https?:\/\//i.test(link);
    const element = safe ? psElement("a", "", parent) : parent;
    if (safe) {
      element.href = link;
      element.target = "_blank";
      element.rel = "noopener noreferrer";
    }
    element.textContent = this.payload.titles[row];
  }
}

// Mount or update the map in `root`; `send(name, value)` reports a click (a row) or a lasso (rows).
function paperscopeMap(root, payload, send) {
  let map = root.__paperscopeMap;
  if (map && map.key !== payload.key) {
    map.destroy();
    map = null;
  }
  if (map) map.update(payload, send);
  else map = root.__paperscopeMap = new PaperscopeMap(root, payload, send);
  return map;
}
