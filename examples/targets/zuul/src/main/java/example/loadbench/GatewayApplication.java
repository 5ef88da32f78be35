/*
 * A Zuul 1 gateway like seed 003's: every request forwarded to one backend by a route
 * given on the command line (zuul.routes.backend.url), so the scenario decides the port.
 */
package example.loadbench;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.cloud.netflix.zuul.EnableZuulProxy;

@SpringBootApplication
@EnableZuulProxy
public class GatewayApplication {

  public static void main(String[] args) {
    SpringApplication.run(GatewayApplication.class, args);
  }
}
