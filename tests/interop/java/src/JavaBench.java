import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * rocketq's load generator on Apache RocketMQ's 4.9.7 Java client: the Java side of benchmarks/java_peer.py.
 * (RocketMQ's own benchmark classes live in rocketmq-example, which is not published to Maven Central.)
 *
 * <pre>
 * java JavaBench -n HOST:PORT --mode sync|async|batch|drain --topic T [--threads 1] [--inflight 1000]
 *      [--batch 32] [--body 1024] [--duration S | --count N] [--warmup S] [--backlog N] [--pull-batch 128]
 *      [--warmup-msgs N]
 * java JavaBench --serve      # one run per stdin line (those options), in one JVM whose JIT stays warm
 * </pre>
 *
 * sync: --threads senders, each waiting for every ack. async: one sender keeping --inflight sends outstanding
 * (a Semaphore). batch: async send(Collection) of --batch messages, --inflight batches outstanding. drain: stores
 * --backlog messages (async batches of 128, 16 in flight, unmeasured), drains --warmup-msgs of them with a
 * throw-away group to warm the JIT, then drains the whole backlog with a DefaultLitePullConsumer as fast as
 * poll() returns.
 *
 * Stdout: "MEASURE start" when the measured window opens, "MEASURE end" when it closes (the caller reads the
 * broker's and this JVM's CPU time at both), then one JSON line: mode, count, seconds, msgs_per_s, errors,
 * latency_ms (p50/p99/p999/max/mean, nearest rank, per operation; absent for drain) and first_error.
 * With --serve, each stdin line is one run and gets its markers and JSON line ({"error": ...} when it cannot
 * run). Diagnostics go to stderr. The topic must exist (the caller creates it with the same queue count for every
 * client).
 */
public final class JavaBench {

    private static final Map<String, String> OPTS = new HashMap<String, String>();

    public static void main(String[] args) throws Exception {
        if (args.length == 1 && "--serve".equals(args[0])) {
            serve();
        } else {
            String out = runOne(args);
            System.out.println(out);
            System.out.flush();
            System.exit(out.startsWith("{") ? 0 : 2);
        }
        System.exit(0); // the client's non-daemon threads would keep the JVM alive
    }

    /** One run per stdin line (the same options as the command line), a JSON line each, until EOF or "quit". */
    private static void serve() throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        String line;
        while ((line = in.readLine()) != null && !"quit".equals(line.trim())) {
            if (line.trim().isEmpty()) {
                continue;
            }
            String out;
            try {
                out = runOne(line.trim().split("\\s+"));
            } catch (Exception e) {
                out = "{\"error\": " + Result.quote(e.toString()) + "}";
            }
            System.out.println(out.startsWith("{") ? out : "{\"error\": " + Result.quote(out) + "}");
            System.out.flush();
        }
    }

    /** The JSON line of one run, or a usage message. */
    private static String runOne(String[] args) throws Exception {
        OPTS.clear();
        for (int i = 0; i + 1 < args.length; i += 2) {
            String key = args[i].startsWith("--") ? args[i].substring(2) : args[i].substring(1);
            OPTS.put(key, args[i + 1]);
        }
        if (args.length % 2 != 0 || !OPTS.containsKey("n") || !OPTS.containsKey("mode") || !OPTS.containsKey("topic")) {
            return "usage: JavaBench -n HOST:PORT --mode sync|async|batch|drain --topic T [options] | JavaBench --serve";
        }
        String mode = OPTS.get("mode");
        if ("drain".equals(mode)) {
            return drain().toJson(mode);
        }
        if ("sync".equals(mode) || "async".equals(mode) || "batch".equals(mode)) {
            return produce(mode).toJson(mode);
        }
        return "unknown mode " + mode;
    }

    private static String opt(String key, String dflt) {
        String v = OPTS.get(key);
        return v != null ? v : dflt;
    }

    private static int intOpt(String key, int dflt) {
        return Integer.parseInt(opt(key, String.valueOf(dflt)));
    }

    private static void marker(String what) {
        System.out.println("MEASURE " + what);
        System.out.flush();
    }

    // ----------------------------------------------------------------------------------------------- produce

    private static DefaultMQProducer producer(String group) throws Exception {
        DefaultMQProducer p = new DefaultMQProducer(group);
        p.setNamesrvAddr(OPTS.get("n"));
        p.setInstanceName(group);
        p.setSendMsgTimeout(30000); // as rocketq bench's producers
        p.start();
        return p;
    }

    private static byte[] body() {
        byte[] b = new byte[intOpt("body", 1024)];
        new Random(42).nextBytes(b);
        return b;
    }

    private static Result produce(String mode) throws Exception {
        String topic = OPTS.get("topic");
        int batch = "batch".equals(mode) ? intOpt("batch", 32) : 1;
        int inflight = intOpt("inflight", "async".equals(mode) ? 1000 : 32);
        int threads = intOpt("threads", 1);
        double duration = Double.parseDouble(opt("duration", "10"));
        long count = Long.parseLong(opt("count", "0"));
        double warmup = Double.parseDouble(opt("warmup", "1"));
        DefaultMQProducer producer = producer("javabench-" + mode + "-" + System.nanoTime());
        byte[] body = body();
        try {
            Load load = "sync".equals(mode)
                ? new SyncLoad(producer, topic, body, threads)
                : new WindowLoad(producer, topic, body, batch, inflight);
            if (warmup > 0) {
                load.run(new Result(batch), warmup, 0); // routes, connections, the JIT; not reported
            }
            Result r = new Result(batch);
            long ops = count > 0 ? (count + batch - 1) / batch : 0;
            marker("start");
            r.seconds = load.run(r, count > 0 ? 0 : duration, ops);
            marker("end");
            return r;
        } finally {
            producer.shutdown();
        }
    }

    /** One way of sending: runs for ``seconds`` or ``ops`` operations, returns the elapsed seconds. */
    private interface Load {
        double run(Result r, double seconds, long ops) throws Exception;
    }

    private static final class SyncLoad implements Load {
        final DefaultMQProducer producer;
        final String topic;
        final byte[] body;
        final int threads;

        SyncLoad(DefaultMQProducer producer, String topic, byte[] body, int threads) {
            this.producer = producer;
            this.topic = topic;
            this.body = body;
            this.threads = threads;
        }

        public double run(final Result r, double seconds, final long ops) throws Exception {
            final long t0 = System.nanoTime();
            final long deadline = seconds > 0 ? t0 + (long) (seconds * 1e9) : Long.MAX_VALUE;
            final AtomicLong started = new AtomicLong();
            Thread[] workers = new Thread[threads];
            for (int i = 0; i < threads; i++) {
                workers[i] = new Thread(new Runnable() {
                    public void run() {
                        while (System.nanoTime() < deadline && (ops == 0 || started.incrementAndGet() <= ops)) {
                            long t = System.nanoTime();
                            try {
                                SendResult sr = producer.send(new Message(topic, body));
                                if (sr.getSendStatus() == SendStatus.SEND_OK) {
                                    r.ok(System.nanoTime() - t);
                                } else {
                                    r.fail(new IllegalStateException(sr.getSendStatus().toString()));
                                }
                            } catch (Exception e) {
                                r.fail(e);
                            }
                        }
                    }
                }, "javabench-sync-" + i);
                workers[i].start();
            }
            for (Thread w : workers) {
                w.join();
            }
            return (System.nanoTime() - t0) / 1e9;
        }
    }

    /** ``inflight`` async sends (or batches) outstanding; elapsed runs to the last answer. */
    private static final class WindowLoad implements Load {
        final DefaultMQProducer producer;
        final String topic;
        final byte[] body;
        final int batch;
        final int inflight;

        WindowLoad(DefaultMQProducer producer, String topic, byte[] body, int batch, int inflight) {
            this.producer = producer;
            this.topic = topic;
            this.body = body;
            this.batch = batch;
            this.inflight = inflight;
        }

        public double run(final Result r, double seconds, long ops) throws Exception {
            final Semaphore window = new Semaphore(inflight);
            long t0 = System.nanoTime();
            long deadline = seconds > 0 ? t0 + (long) (seconds * 1e9) : Long.MAX_VALUE;
            long started = 0;
            while ((ops == 0 || started < ops) && System.nanoTime() < deadline) {
                if (!window.tryAcquire(100, TimeUnit.MILLISECONDS)) {
                    continue;
                }
                started++;
                final long t = System.nanoTime();
                SendCallback cb = new SendCallback() {
                    public void onSuccess(SendResult sr) {
                        if (sr.getSendStatus() == SendStatus.SEND_OK) {
                            r.ok(System.nanoTime() - t);
                        } else {
                            r.fail(new IllegalStateException(sr.getSendStatus().toString()));
                        }
                        window.release();
                    }

                    public void onException(Throwable e) {
                        r.fail(e);
                        window.release();
                    }
                };
                try {
                    if (batch > 1) {
                        List<Message> msgs = new ArrayList<Message>(batch);
                        for (int i = 0; i < batch; i++) {
                            msgs.add(new Message(topic, body));
                        }
                        producer.send(msgs, cb, 30000);
                    } else {
                        producer.send(new Message(topic, body), cb, 30000);
                    }
                } catch (Exception e) {
                    r.fail(e);
                    window.release();
                }
            }
            // Every answer (or the send timeout), bounded: 60 s past the send timeout.
            if (!window.tryAcquire(inflight, 90, TimeUnit.SECONDS)) {
                r.fail(new IllegalStateException("sends still unanswered 90 s after the last one"));
            } else {
                window.release(inflight);
            }
            return (System.nanoTime() - t0) / 1e9;
        }
    }

    // ------------------------------------------------------------------------------------------------- drain

    private static Result drain() throws Exception {
        String topic = OPTS.get("topic");
        long backlog = Long.parseLong(opt("backlog", "100000"));
        long warmMsgs = Math.min(backlog, Long.parseLong(opt("warmup-msgs", "20000")));
        int pullBatch = intOpt("pull-batch", 128);
        byte[] body = body();
        String run = String.valueOf(System.nanoTime());
        DefaultMQProducer producer = producer("javabench-preload-" + run);
        try {
            Result pre = new Result(128);
            new WindowLoad(producer, topic, body, 128, 16).run(pre, 0, (backlog + 127) / 128);
            if (pre.errors.get() > 0) {
                throw new IllegalStateException("preload failed: " + pre.firstError.get());
            }
            long stored = pre.done.get();
            System.err.printf(Locale.ROOT, "preloaded %d messages%n", stored);
            if (warmMsgs > 0) {
                consume(topic, "javabench-warm-" + run, pullBatch, warmMsgs, new Result(1), false);
            }
            Result r = new Result(1);
            consume(topic, "javabench-drain-" + run, pullBatch, stored, r, true);
            return r;
        } finally {
            producer.shutdown();
        }
    }

    /** Poll from the first offset until ``expected`` messages arrived (or 30 s without one). */
    private static void consume(String topic, String group, int pullBatch, long expected, Result r, boolean measured)
            throws Exception {
        DefaultLitePullConsumer c = new DefaultLitePullConsumer(group);
        c.setNamesrvAddr(OPTS.get("n"));
        c.setInstanceName(group);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        // The same flow control rocketq bench's drain gives its LitePullConsumer.
        c.setPullBatchSize(pullBatch);
        c.setPullThresholdForAll(Math.max(10000, pullBatch * 64));
        c.setPullThresholdForQueue(Math.max(1000, pullBatch * 32));
        c.setPollTimeoutMillis(1000);
        c.subscribe(topic, "*");
        c.start();
        try {
            if (measured) {
                marker("start");
            }
            long t0 = System.nanoTime();
            long last = t0;
            long got = 0;
            while (got < expected && System.nanoTime() - last < 30_000_000_000L) {
                List<MessageExt> msgs = c.poll(1000);
                if (!msgs.isEmpty()) {
                    got += msgs.size();
                    last = System.nanoTime();
                }
            }
            r.seconds = (System.nanoTime() - t0) / 1e9;
            if (measured) {
                marker("end");
            }
            r.done.set(got);
            if (got < expected) {
                r.fail(new IllegalStateException("only " + got + " of " + expected + " messages arrived"));
            }
        } finally {
            c.shutdown();
        }
    }

    // ------------------------------------------------------------------------------------------------ result

    private static final class Result {
        final int perOp;
        final AtomicLong done = new AtomicLong();
        final AtomicLong errors = new AtomicLong();
        final AtomicReference<String> firstError = new AtomicReference<String>();
        double seconds;
        private long[] lat = new long[1 << 16];
        private int n;

        Result(int perOp) {
            this.perOp = perOp;
        }

        synchronized void ok(long nanos) {
            if (n == lat.length) {
                lat = Arrays.copyOf(lat, n * 2);
            }
            lat[n++] = nanos;
            done.addAndGet(perOp);
        }

        void fail(Throwable e) {
            errors.incrementAndGet();
            firstError.compareAndSet(null, e.getClass().getSimpleName() + ": " + e.getMessage());
        }

        private static double pct(long[] sorted, double q) {
            int count = sorted.length;
            long rank = (long) Math.ceil(Math.round(q * count / 100.0 * 1e9) / 1e9);
            int idx = (int) Math.min(count, Math.max(1, rank)) - 1;
            return sorted[idx] / 1e6;
        }

        synchronized String toJson(String mode) {
            StringBuilder sb = new StringBuilder("{");
            sb.append("\"client\": \"java-4.9.7\", \"mode\": \"").append(mode).append('"');
            sb.append(String.format(Locale.ROOT, ", \"count\": %d, \"seconds\": %.4f, \"msgs_per_s\": %.1f",
                done.get(), seconds, seconds > 0 ? done.get() / seconds : 0.0));
            sb.append(", \"errors\": ").append(errors.get());
            if (n > 0) {
                long[] s = Arrays.copyOf(lat, n);
                Arrays.sort(s);
                double sum = 0;
                for (long v : s) {
                    sum += v;
                }
                sb.append(String.format(Locale.ROOT,
                    ", \"latency_ms\": {\"count\": %d, \"mean\": %.4f, \"p50\": %.4f, \"p99\": %.4f, \"p999\": %.4f,"
                        + " \"max\": %.4f}", n, sum / n / 1e6, pct(s, 50), pct(s, 99), pct(s, 99.9), s[n - 1] / 1e6));
            } else {
                sb.append(", \"latency_ms\": null");
            }
            String err = firstError.get();
            sb.append(", \"first_error\": ").append(err == null ? "null" : quote(err));
            return sb.append('}').toString();
        }

        static String quote(String s) {
            StringBuilder sb = new StringBuilder("\"");
            for (char ch : s.toCharArray()) {
                if (ch == '"' || ch == '\\') {
                    sb.append('\\').append(ch);
                } else if (ch < 0x20) {
                    sb.append(String.format(Locale.ROOT, "\\u%04x", (int) ch));
                } else {
                    sb.append(ch);
                }
            }
            return sb.append('"').toString();
        }
    }

    private JavaBench() {
    }
}
