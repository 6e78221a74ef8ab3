// Runs the `jsonrepair` npm package over a JSON array of texts read from stdin and
// prints, for each, ["value", parsed] or ["refused", null]. Used by extract_peers.py.
const path = require("path");
let jsonrepair;
try {
  ({ jsonrepair } = require(path.join(__dirname, "node", "node_modules", "jsonrepair")));
} catch (e) {
  ({ jsonrepair } = require("jsonrepair"));
}
let input = "";
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", () => {
  const out = JSON.parse(input).map((text) => {
    try {
      return ["value", JSON.parse(jsonrepair(text))];
    } catch (e) {
      return ["refused", null];
    }
  });
  process.stdout.write(JSON.stringify(out));
});
