// A loopback address where nothing listens, for tests of a service that refuses connections.
//
// A port taken with listen(0) and released again is not enough: the kernel hands the same port to
// the next listen(0), in any worker, and the "refused" service then answers (a CI run got a 404
// from another file's server). Port 2 lies outside the range listen(0) draws from (32768–60999
// here), only a privileged process could listen on it, and it is not one of the ports fetch()
// refuses to use. The first call checks that a connection to it is refused.
import { connect } from "node:net";

const HOST = "127.0.0.1";
const PORT = 2;
let checked: Promise<void> | undefined;

function check(): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect(PORT, HOST);
    socket.once("connect", () => {
      socket.destroy();
      reject(new Error(`refusedUrl(): something listens on ${HOST}:${PORT}; the tests need it closed`));
    });
    socket.once("error", (err: NodeJS.ErrnoException) => {
      if (err.code === "ECONNREFUSED") resolve();
      else reject(new Error(`refusedUrl(): connecting to ${HOST}:${PORT} failed with ${err.code ?? err.message}, not ECONNREFUSED`));
    });
  });
}

/** `http://127.0.0.1:2` plus `path`: connections to it are refused at once. */
export async function refusedUrl(path = ""): Promise<string> {
  checked ??= check();
  await checked;
  return `http://${HOST}:${PORT}${path}`;
}
