public final class RocketqDriver {
    public static void main(String[] args) { System.out.println("placeholder"); }
}
