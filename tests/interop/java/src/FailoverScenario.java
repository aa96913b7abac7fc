import com.alibaba.fastjson.JSONObject;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;

import java.io.File;

/**
 * The Java 4.9 client across a master's death (the caller kills it between two phases).
 *
 * <pre>failover --namesrv A --topic T --group G --count N --ready-file F --go-file G [--poll-ms 1000]</pre>
 *
 * A producer and a push consumer (pollNameServerInterval lowered to --poll-ms so the test does not wait for
 * Java's 30 s; heartbeats and offset persistence every second). Phase "a": N sync sends, all consumed. Phase
 * "b": the consumer is suspended and N more are sent (a backlog). Then --ready-file is created and the driver
 * waits for --go-file (the caller kills a master meanwhile). Phase "c": the consumer resumes and N more are
 * sent; the driver waits for all 3N keys, lingers, and shuts the consumer down (its offsets are persisted
 * wherever the route now allows: a slave when the master is gone). Every send's outcome is a line.
 */
final class FailoverScenario {
    private FailoverScenario() {
    }

    static void run(RocketqDriver.Opts o) throws Exception {
        String topic = o.topic();
        int n = o.count();
        int pollMs = o.getInt("poll-ms", 1000);
        DefaultMQProducer p = new DefaultMQProducer(o.group() + "-producer");
        p.setPollNameServerInterval(pollMs);
        p.setHeartbeatBrokerInterval(1000);
        Clients.start(o, p, o.group() + "-producer");
        Out.Collector got = new Out.Collector();
        DefaultMQPushConsumer c = Clients.pushConsumer(o, o.group(), o.group(), false);
        c.setPollNameServerInterval(pollMs);
        c.setHeartbeatBrokerInterval(1000);
        c.setPersistConsumerOffsetInterval(1000);
        c.setPullTimeDelayMillsWhenException(500);
        c.subscribe(topic, "*");
        Scenarios.collect(o, c, o.group(), got, Clients.BY_KEYS);

        boolean complete = phase(o, p, topic, "a", n) && got.await(n, o);
        c.suspend();
        complete &= phase(o, p, topic, "b", n);
        touch(o.get("ready-file", null));
        waitFor(o, o.get("go-file", null));
        c.resume();
        complete &= phase(o, p, topic, "c", n);
        complete &= got.await(3 * n, o);
        Clients.linger(o);
        c.shutdown();
        p.shutdown();
        Out.emit(Out.done("failover", complete));
    }

    /** N sync sends; false when one of them failed (each outcome is emitted). */
    static boolean phase(RocketqDriver.Opts o, DefaultMQProducer p, String topic, String name, int n) {
        boolean ok = true;
        for (int i = 0; i < n; i++) {
            Message m = Clients.message(topic, "Tag-" + name, "k-" + name + "-" + i, "body " + name + " " + i);
            try {
                SendResult r = p.send(m);
                Out.emit(Out.sent(name, m, r));
            } catch (Exception e) {
                JSONObject err = Out.event("send-error");
                err.put("keys", m.getKeys());
                err.put("error", String.valueOf(e));
                Out.emit(err);
                ok = false;
            }
        }
        return ok;
    }

    static void touch(String path) throws Exception {
        if (path != null && !new File(path).createNewFile()) {
            throw new IllegalStateException(path + " exists already");
        }
    }

    static void waitFor(RocketqDriver.Opts o, String path) throws InterruptedException {
        while (path != null && !new File(path).exists() && o.remainingMs() > 0) {
            Thread.sleep(50);
        }
    }
}
