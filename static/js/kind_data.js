// A kind's page data (its kind-data URL, rendered by the run page) fetched once the run has
// succeeded: the stored state and the final status both say so, so the first of them loads it,
// and a failed request lets the next one try again.

/**
 * @param {string} url             the run's kind-data URL (``urls.kindData``)
 * @param {(data: object) => void} show  draws the data on the page
 * @returns {{state(state), status(msg)}} the kind module's live-message handlers
 */
export function whenSucceeded(url, show) {
  let requested = false;

  async function load() {
    if (requested) return;
    requested = true;
    const response = await fetch(url, { headers: { Accept: "application/json" } }).catch(() => null);
    if (!response?.ok) {
      requested = false;
      return;
    }
    show(await response.json());
  }

  return {
    state: (state) => { if (state.status === "succeeded") load(); },
    status: (msg) => { if (msg.status === "succeeded") load(); },
  };
}
