/*
 * The seeds' Spring Boot test app (seed 002): the smallest Spring MVC endpoint a
 * benchmark can hit, so a run measures Tomcat + Spring's dispatch and JSON, nothing else.
 */
package example.loadbench;

import java.util.HashMap;
import java.util.Map;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

@SpringBootApplication
@RestController
public class TestApplication {

  public static void main(String[] args) {
    SpringApplication.run(TestApplication.class, args);
  }

  /** The seed's TestController: a fresh map serialized to JSON on every request. */
  @RequestMapping("/test")
  public Map<String, Object> test() {
    Map<String, Object> result = new HashMap<>();
    result.put("message", "OK");
    result.put("status", 200);
    result.put("data", 1);
    return result;
  }
}
