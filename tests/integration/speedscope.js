// Load a trace into speedscope (npm) in headless Chromium, the way a person does (the
// file picker), and print what it shows: the profile title with its (i/N) count, the
// number of profiles, and any error the page raised. Usage: node speedscope.js NPMDIR TRACE PNG
const [dir, trace, shot] = process.argv.slice(2);
const { chromium } = require(dir + '/node_modules/playwright-core');
(async () => {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking',
           '--disable-component-update', '--disable-sync', '--no-first-run'] });
  const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
  const errors = [];
  page.on('pageerror', e => errors.push(String(e)));
  // speedscope asks for a web font: the only request a closed network refuses
  page.on('console', m => { if (m.type() === 'error' && !/ERR_NAME_NOT_RESOLVED|ERR_INTERNET/.test(m.text())) errors.push(m.text()); });
  await page.goto('file://' + dir + '/node_modules/speedscope/dist/release/index.html');
  await page.setInputFiles('input[type=file]', trace);
  await page.waitForFunction(() => /\(\d+\/\d+\)/.test(document.body.innerText) ||
                                   /wrong|rror|nrecognized/.test(document.body.innerText), null, { timeout: 20000 }).catch(() => {});
  const text = await page.evaluate(() => document.body.innerText);
  if (shot) await page.screenshot({ path: shot });
  const m = text.match(/\((\d+)\/(\d+)\)/);
  console.log(JSON.stringify({ title: text.split('\n').find(l => /\(\d+\/\d+\)/.test(l)) || '',
                               profiles: m ? +m[2] : 0, errors, text: m ? '' : text.slice(0, 300) }));
  await browser.close();
})().catch(e => { console.log(JSON.stringify({ profiles: 0, errors: [String(e)] })); process.exit(0); });
