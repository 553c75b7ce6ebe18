import java.lang.reflect.InvocationTargetException;
import java.util.Arrays;

/**
 * Runs a Kotlin script that kotlinc compiled to a class (``kotlinc main.kts -d .`` writes ``Main``): the
 * script's body is that class's constructor, which takes the script's arguments. Compiled into the toolchain
 * image by sandbox/image/extras.py; run as ``java -cp .:<this>:<Kotlin runtime> KotlinScript Main``.
 * An exception the script throws is rethrown as itself, so the JVM reports it as it would from a main.
 */
public final class KotlinScript {
    public static void main(String[] argv) throws Throwable {
        if (argv.length < 1) {
            System.err.println("usage: KotlinScript <script class> [args...]");
            System.exit(2);
        }
        Class<?> script = Class.forName(argv[0]);
        String[] args = Arrays.copyOfRange(argv, 1, argv.length);
        try {
            script.getConstructor(String[].class).newInstance((Object) args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }
}
