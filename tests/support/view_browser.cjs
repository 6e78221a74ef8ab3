// Drives `pactum view` in headless Chromium (Debian's /usr/bin/chromium) with
// playwright-core, for tests/cli_view.rs:
//   node view_browser.cjs PLAYWRIGHT_CORE BASE_URL SCREENSHOT.png PROFILE_DIR REPORT.html
// Loads each page, follows registry -> a version's history and eval runs -> a comparison,
// reads the order of the comparison's rows, checks that no markup from the model ran or
// became an element, screenshots the comparison, and does the same checks on the file of
// `pactum eval --format html`. Prints one JSON document; the Rust test asserts on it.
const { chromium } = require(process.argv[2]);
const [base, screenshot, profile, reportFile] = process.argv.slice(3);

// What a page shows of the model's markup: whether a script ran, whether any img or
// script element exists in the content, whether the markup is there as text.
async function inspect(page) {
  return page.evaluate(() => ({
    pwned: typeof window.pwned,
    elements: document.querySelectorAll("main img, main script, body script").length,
    script_text: document.body.innerText.includes("<script>window.pwned=1</script>"),
    img_text: document.body.innerText.includes("<img src=x onerror="),
    title: (document.querySelector("h1") || {}).textContent,
  }));
}

(async () => {
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
    ],
    viewport: { width: 1400, height: 900 },
  });
  const page = context.pages()[0] || (await context.newPage());
  const violations = [];
  page.on("console", (m) => { if (m.type() === "error") violations.push(m.text()); });
  const result = { pages: {} };
  for (const path of ["/", "/registry", "/evals", "/runs", "/stats"]) {
    const response = await page.goto(base + path);
    result.pages[path] = { status: response.status(), ...(await inspect(page)) };
  }

  await page.goto(base + "/registry");
  await Promise.all([
    page.waitForURL("**/history/PRC-TRIAGE-001/1.1.0"),
    page.click('a[href="/history/PRC-TRIAGE-001/1.1.0"]'),
  ]);
  result.history = await inspect(page);
  result.history.events = await page.locator("li.event").count();

  await page.goto(base + "/evals");
  await Promise.all([page.waitForURL("**/evals/*"), page.click("a.run")]);
  result.comparison = await inspect(page);
  result.comparison.kinds = await page
    .locator("tr.case")
    .evaluateAll((rows) => rows.map((r) => r.dataset.kind));
  await page.screenshot({ path: screenshot, fullPage: true });

  await page.goto("file://" + reportFile);
  result.file = await inspect(page);
  result.console_errors = violations;
  await context.close();
  console.log(JSON.stringify(result));
})().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
