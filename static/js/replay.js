// A time slider replaying per-rack values on the floor plan (the failures and power kinds' panels):
// a range input [data-replay], a Play/Pause button [data-play] and a time label [data-replay-time]
// inside the panel. The kind says how many frames there are, the values of a frame and how its
// time reads; this module registers the replay metric, draws frame 0 and runs the slider.

/**
 * @param {HTMLElement} panel   the element holding the slider, the button and the time label
 * @param {FloorPlan} floor     the page's floor plan
 * @param {object} replay       {metric: name, spec: metric description (label, unit, scale),
 *                               frames: count, step: frames per tick (1), intervalMs: tick (60),
 *                               valuesAt(frame) -> per-rack values (it may also update what
 *                               else the panel says of that frame), timeText(frame) -> string}
 * @returns {{show(frame), stop()}}
 */
export function bindReplay(panel, floor, { metric, spec, frames, step = 1, intervalMs = 60, valuesAt, timeText }) {
  const slider = panel.querySelector("[data-replay]");
  const button = panel.querySelector("[data-play]");
  const time = panel.querySelector("[data-replay-time]");
  let timer = 0;

  function show(frame) {
    floor.setValues(metric, valuesAt(frame));
    if (time) time.textContent = timeText(frame);
  }

  // Moving the slider or pressing Play is asking to see the replay: the floor plan switches to
  // its metric (the user need not find it in the "Color by" select first).
  function showing() {
    if (floor.current?.name !== metric) floor.setMetric(metric);
  }

  function stop() {
    clearInterval(timer);
    timer = 0;
    button.textContent = "Play";
  }

  slider.min = "0";
  slider.max = String(frames - 1);
  slider.value = "0";
  slider.addEventListener("input", () => {
    showing();
    show(Number(slider.value));
  });
  button.addEventListener("click", () => {
    if (timer) {
      stop();
      return;
    }
    showing();
    button.textContent = "Pause";
    timer = setInterval(() => {
      slider.value = String((Number(slider.value) + step) % frames);
      show(Number(slider.value));
    }, intervalMs);
  });
  floor.register(metric, spec);
  show(0);
  return { show, stop };
}
