import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageBuilder;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;
import org.apache.rocketmq.client.apis.producer.Transaction;
import org.apache.rocketmq.client.apis.producer.TransactionResolution;

/**
 * A driver for Apache RocketMQ's Java 5.x gRPC client (Maven rocketmq-client-java), run by
 * tests/interop/v5/test_java_client.py, one JVM per scenario:
 *
 *   V5Driver ENDPOINT produce TOPIC KIND COUNT      KIND: normal fifo delay tx
 *   V5Driver ENDPOINT simple GROUP TOPIC COUNT      receive COUNT, change the first one's invisible duration,
 *                                                   ack all, then one more receive (expected empty)
 *   V5Driver ENDPOINT push GROUP TOPIC COUNT        a PushConsumer failing each message's first delivery
 *
 * Results are JSON lines on stdout; exit 0 only when the scenario ran to its end; every wait is bounded.
 */
public final class V5Driver {
    private static final long WAIT_MS = 60_000;

    private static String q(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    private static String body(MessageView m) {
        ByteBuffer buf = m.getBody().duplicate();
        byte[] bytes = new byte[buf.remaining()];
        buf.get(bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }

    private static String view(String event, MessageView m) {
        return "{\"event\":" + q(event) + ",\"body\":" + q(body(m)) + ",\"attempt\":" + m.getDeliveryAttempt()
            + ",\"tag\":" + q(m.getTag().orElse("")) + ",\"group\":" + q(m.getMessageGroup().orElse(""))
            + ",\"topic\":" + q(m.getTopic()) + "}";
    }

    private static ClientConfiguration config(String endpoint) {
        return ClientConfiguration.newBuilder().setEndpoints(endpoint).enableSsl(false)
            .setRequestTimeout(Duration.ofSeconds(5)).build();
    }

    static void produce(ClientServiceProvider p, String endpoint, String topic, String kind, int count)
        throws Exception {
        List<String> checked = new CopyOnWriteArrayList<>();
        Producer producer = p.newProducerBuilder().setClientConfiguration(config(endpoint)).setTopics(topic)
            .setTransactionChecker(mv -> {
                checked.add(body(mv));
                return TransactionResolution.COMMIT;
            }).build();
        try {
            for (int i = 0; i < count; i++) {
                String text = "java-" + kind + "-" + i;
                MessageBuilder mb = p.newMessageBuilder().setTopic(topic).setTag("TagJ").setKeys("key-" + i)
                    .addProperty("k", "v" + i).setBody(text.getBytes(StandardCharsets.UTF_8));
                if (kind.equals("fifo")) mb.setMessageGroup("group-" + (i % 2));
                if (kind.equals("delay")) mb.setDeliveryTimestamp(System.currentTimeMillis() + 2000);
                Message msg = mb.build();
                SendReceipt r;
                if (kind.equals("tx")) {
                    Transaction tx = producer.beginTransaction();
                    r = producer.send(msg, tx);
                    tx.commit();
                } else {
                    r = producer.send(msg);
                }
                System.out.println("{\"body\":" + q(text) + ",\"message_id\":" + q(r.getMessageId().toString()) + "}");
            }
        } finally {
            producer.close();
        }
    }

    static void simple(ClientServiceProvider p, String endpoint, String group, String topic, int count)
        throws Exception {
        SimpleConsumer c = p.newSimpleConsumerBuilder().setClientConfiguration(config(endpoint))
            .setConsumerGroup(group).setAwaitDuration(Duration.ofSeconds(5))
            .setSubscriptionExpressions(Collections.singletonMap(topic, FilterExpression.SUB_ALL)).build();
        try {
            List<MessageView> got = new ArrayList<>();
            long deadline = System.currentTimeMillis() + WAIT_MS;
            while (got.size() < count && System.currentTimeMillis() < deadline) {
                got.addAll(c.receive(16, Duration.ofSeconds(15)));
            }
            boolean changed = false;
            for (MessageView m : got) {
                if (!changed) {
                    c.changeInvisibleDuration(m, Duration.ofSeconds(20));  // the ack below uses the new handle
                    changed = true;
                }
                c.ack(m);
                System.out.println(view("acked", m));
            }
            System.out.println("{\"event\":\"after\",\"count\":" + c.receive(16, Duration.ofSeconds(15)).size() + "}");
        } finally {
            c.close();
        }
    }

    static void push(ClientServiceProvider p, String endpoint, String group, String topic, int count)
        throws Exception {
        Map<String, List<Integer>> attempts = new ConcurrentHashMap<>();
        PushConsumer c = p.newPushConsumerBuilder().setClientConfiguration(config(endpoint)).setConsumerGroup(group)
            .setSubscriptionExpressions(Collections.singletonMap(topic, FilterExpression.SUB_ALL))
            .setMessageListener(m -> {
                List<Integer> seen = attempts.computeIfAbsent(body(m), k -> new CopyOnWriteArrayList<>());
                seen.add(m.getDeliveryAttempt());
                return seen.size() == 1 ? ConsumeResult.FAILURE : ConsumeResult.SUCCESS;
            }).build();
        try {
            long deadline = System.currentTimeMillis() + WAIT_MS;
            while (System.currentTimeMillis() < deadline) {
                if (attempts.size() >= count && attempts.values().stream().allMatch(a -> a.size() >= 2)) break;
                Thread.sleep(100);
            }
            Thread.sleep(1000);  // the second attempts' acks
            StringBuilder b = new StringBuilder("{\"event\":\"push\",\"attempts\":{");
            boolean first = true;
            for (Map.Entry<String, List<Integer>> e : attempts.entrySet()) {
                if (!first) b.append(',');
                first = false;
                b.append(q(e.getKey())).append(':').append(e.getValue().toString());
            }
            System.out.println(b.append("}}"));
        } finally {
            c.close();
        }
    }

    public static void main(String[] args) throws Exception {
        ClientServiceProvider p = ClientServiceProvider.loadService();
        String endpoint = args[0];
        switch (args[1]) {
            case "produce": produce(p, endpoint, args[2], args[3], Integer.parseInt(args[4])); break;
            case "simple": simple(p, endpoint, args[2], args[3], Integer.parseInt(args[4])); break;
            case "push": push(p, endpoint, args[2], args[3], Integer.parseInt(args[4])); break;
            default: throw new IllegalArgumentException("unknown command " + args[1]);
        }
        System.exit(0);
    }
}
