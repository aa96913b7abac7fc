import com.alibaba.fastjson.JSONObject;

import java.util.HashMap;
import java.util.Map;

/**
 * rocketq's own driver of the Apache RocketMQ 4.9 Java client.
 *
 * <pre>java RocketqDriver SCENARIO --namesrv HOST:PORT [--topic T] [--group G] [--count N] [--timeout S] ...</pre>
 *
 * Prints one JSON object per line on stdout (what was sent, received, checked ...) and a final
 * {"done":true,...}; diagnostics go to stderr. Exit code 0 unless the driver itself failed: whether
 * everything arrived is for the caller to judge from the lines. A watchdog ends the JVM (exit 3) if a
 * scenario overruns its --timeout by more than 15 s.
 */
public final class RocketqDriver {
    private RocketqDriver() {
    }

    public static void main(String[] argv) {
        if (argv.length < 1) {
            System.err.println("usage: RocketqDriver SCENARIO --namesrv HOST:PORT [options]");
            System.exit(2);
        }
        Opts opts = Opts.parse(argv);
        startWatchdog(opts);
        int rc = 0;
        try {
            Scenarios.run(argv[0], opts);
        } catch (Throwable t) {
            t.printStackTrace();
            JSONObject o = new JSONObject();
            o.put("done", true);
            o.put("scenario", argv[0]);
            o.put("error", String.valueOf(t));
            Out.emit(o);
            rc = 1;
        }
        System.out.flush();
        // Client threads (timers, Netty) are not daemons: leave explicitly.
        Runtime.getRuntime().halt(rc);
    }

    private static void startWatchdog(final Opts opts) {
        Thread t = new Thread(new Runnable() {
            public void run() {
                try {
                    Thread.sleep(opts.timeoutMs() + 15_000L);
                } catch (InterruptedException e) {
                    return;
                }
                System.err.println("watchdog: scenario overran its timeout");
                System.out.flush();
                Runtime.getRuntime().halt(3);
            }
        }, "driver-watchdog");
        t.setDaemon(true);
        t.start();
    }

    /** --key value options; every option has a default so scenarios stay short to invoke. */
    static final class Opts {
        final Map<String, String> values = new HashMap<String, String>();
        final long startedAt = System.currentTimeMillis();

        static Opts parse(String[] argv) {
            Opts o = new Opts();
            for (int i = 1; i < argv.length; i++) {
                if (!argv[i].startsWith("--") || i + 1 >= argv.length) {
                    throw new IllegalArgumentException("expected --key value, got " + argv[i]);
                }
                o.values.put(argv[i].substring(2), argv[++i]);
            }
            if (!o.values.containsKey("namesrv")) {
                throw new IllegalArgumentException("--namesrv HOST:PORT is required");
            }
            return o;
        }

        String get(String key, String dflt) {
            String v = values.get(key);
            return v == null ? dflt : v;
        }

        int getInt(String key, int dflt) {
            return Integer.parseInt(get(key, String.valueOf(dflt)));
        }

        String namesrv() {
            return values.get("namesrv");
        }

        String topic() {
            return get("topic", "DriverTopic");
        }

        String group() {
            return get("group", "DriverGroup");
        }

        int count() {
            return getInt("count", 5);
        }

        long timeoutMs() {
            return (long) (Double.parseDouble(get("timeout", "60")) * 1000);
        }

        /** How long to keep listening after the expected messages arrived (to see duplicates or strays). */
        long lingerMs() {
            return getInt("linger-ms", 1500);
        }

        /** Milliseconds left before --timeout (never negative). */
        long remainingMs() {
            return Math.max(0, startedAt + timeoutMs() - System.currentTimeMillis());
        }
    }
}
